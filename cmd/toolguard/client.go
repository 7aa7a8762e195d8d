package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/toolguard/toolguard/admin"
	"github.com/toolguard/toolguard/config"
	"github.com/toolguard/toolguard/journal"
)

// source is where inspection commands read the journal from: the running
// proxy's admin API, or a stopped proxy's journal file.
type source interface {
	steps(ctx context.Context, f journal.Filter) ([]admin.StepView, error)
	step(ctx context.Context, key string) (admin.StepView, error)
	events(ctx context.Context, after uint64, limit int) ([]journal.Event, error)
	close() error
}

// sourceFlags are --admin, --token, --config, --journal and --dsn, shared
// by inspection commands.
type sourceFlags struct {
	admin   string
	token   string
	config  string
	journal string
	dsn     string
}

func (f *sourceFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.admin, "admin", "", "admin API `URL` (default $TOOLGUARD_ADMIN_URL or http://127.0.0.1:8481)")
	fs.StringVar(&f.token, "token", "", "operator `token` for the admin API (default $TOOLGUARD_ADMIN_TOKEN, $TOOLGUARD_ADMIN_TOKEN_FILE, "+
		"the config's admin.token, or the token serve generated beside the journal)")
	fs.StringVar(&f.config, "config", "", "serve's config `file`, to find the generated operator token (with TOOLGUARD_JOURNAL_PATH and the other TOOLGUARD_* variables)")
	fs.StringVar(&f.journal, "journal", "", "read a stopped proxy's journal `file` instead of the admin API")
	fs.StringVar(&f.dsn, "dsn", "", "read the PostgreSQL journal at `DSN` instead of the admin API "+
		"(default $TOOLGUARD_JOURNAL_DSN when TOOLGUARD_JOURNAL_BACKEND=postgres)")
}

// direct opens the journal named by --journal or --dsn (or, when no
// source flag is given, the environment's DSN) read-only; nil when the
// admin API is to be used.
func (f *sourceFlags) direct(ctx context.Context) (journal.Store, error) {
	if f.dsn == "" && f.journal == "" && f.admin == "" {
		f.dsn = envDSN()
	}
	switch {
	case f.journal != "" && f.dsn != "":
		return nil, usagef("--journal and --dsn name two journals: give one")
	case f.dsn != "":
		j, err := openPostgresReadOnly(ctx, f.dsn)
		if err != nil {
			return nil, err
		}
		return j, nil
	case f.journal != "":
		if _, err := os.Stat(f.journal); err != nil {
			return nil, fmt.Errorf("open journal: %w", err)
		}
		j, err := openReadOnly(f.journal)
		if err != nil {
			return nil, err
		}
		return j, nil
	}
	return nil, nil
}

func (f *sourceFlags) open() (source, error) {
	j, err := f.direct(context.Background())
	if err != nil {
		return nil, err
	}
	if j != nil {
		return fileSource{j}, nil
	}
	c, err := f.client()
	if err != nil {
		return nil, err
	}
	return apiSource{c}, nil
}

// client is the admin API's client: --admin (or TOOLGUARD_ADMIN_URL) with
// the operator token; an error says why the token could not be read.
func (f *sourceFlags) client() (*admin.Client, error) {
	base := f.admin
	if base == "" {
		base = os.Getenv("TOOLGUARD_ADMIN_URL")
	}
	if base == "" {
		base = "http://127.0.0.1:8481"
	}
	token, looked, err := f.operatorToken()
	if err != nil {
		return nil, err
	}
	return &admin.Client{BaseURL: strings.TrimRight(base, "/"), Token: token, UnauthorizedHint: unauthorizedHint(looked),
		HTTP: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: nil}}}, nil
}

// unauthorizedHint says where the CLI looks for the operator token; looked
// is the generated token file looked for in vain.
func unauthorizedHint(looked string) string {
	h := " (set TOOLGUARD_ADMIN_TOKEN or TOOLGUARD_ADMIN_TOKEN_FILE, or pass --token"
	if looked != "" {
		h += "; no generated token at " + looked + ": point --config or TOOLGUARD_JOURNAL_PATH at the proxy's journal"
	}
	return h + ")"
}

// operatorToken is the token the CLI sends, the first of: --token,
// TOOLGUARD_ADMIN_TOKEN, TOOLGUARD_ADMIN_TOKEN_FILE, the admin.token (or
// token_file) of --config, and the token serve generated, found where serve
// keeps it for that configuration (see config.GeneratedTokenPath; the
// environment's TOOLGUARD_JOURNAL_PATH and the rest apply). looked names that
// file when no token was found; "" and no error then means none.
func (f *sourceFlags) operatorToken() (token, looked string, err error) {
	if f.token != "" {
		return f.token, "", nil
	}
	envToken, envFile := os.Getenv("TOOLGUARD_ADMIN_TOKEN"), os.Getenv("TOOLGUARD_ADMIN_TOKEN_FILE")
	if envToken != "" || envFile != "" {
		token, err := adminToken(envToken, envFile)
		return token, "", err
	}
	cfg := config.Default()
	if f.config != "" {
		if cfg, err = config.ParseFile(f.config, cfg); err != nil {
			return "", "", err
		}
	}
	if err := config.ApplyEnv(&cfg, os.Environ()); err != nil {
		return "", "", err
	}
	return configToken(cfg)
}

// configToken is the operator token of a serve configuration: its
// admin.token or token_file, else the generated token file, when it exists.
func configToken(cfg config.Config) (token, looked string, err error) {
	if err := cfg.LoadSecrets(); err != nil {
		return "", "", err
	}
	if cfg.Admin.Token != "" {
		return cfg.Admin.Token, "", nil
	}
	path := absPath(cfg.GeneratedTokenPath())
	token, err = admin.ReadToken(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", path, nil
	}
	return token, "", err
}

// adminToken is the operator token the CLI sends: TOOLGUARD_ADMIN_TOKEN, or
// the content of the file TOOLGUARD_ADMIN_TOKEN_FILE names (a Kubernetes
// secret), trailing newline dropped. Both at once, an unreadable file or an
// empty one is a configuration error.
func adminToken(token, file string) (string, error) {
	if file == "" {
		return token, nil
	}
	e := &config.Error{Field: "TOOLGUARD_ADMIN_TOKEN_FILE", Value: file}
	if token != "" {
		e.Msg = "set together with TOOLGUARD_ADMIN_TOKEN; use one of them"
		return "", e
	}
	data, err := os.ReadFile(file)
	if err != nil {
		e.Msg, e.Err = fmt.Sprintf("cannot read token file: %v", err), err
		return "", e
	}
	token = strings.TrimRight(string(data), "\r\n")
	if strings.TrimSpace(token) == "" {
		e.Msg = fmt.Sprintf("token file %s is empty", file)
		return "", e
	}
	return token, nil
}

// fileSource reads a journal opened read-only: a file or a database.
type fileSource struct{ j journal.Store }

func (s fileSource) steps(_ context.Context, f journal.Filter) ([]admin.StepView, error) {
	steps, err := s.j.List(f)
	if err != nil {
		return nil, err
	}
	out := make([]admin.StepView, len(steps))
	for i := range steps {
		out[i] = admin.ViewOf(&steps[i])
	}
	return out, nil
}

func (s fileSource) step(_ context.Context, key string) (admin.StepView, error) {
	st, err := admin.FindStep(s.j, key)
	if err != nil {
		return admin.StepView{}, fmt.Errorf("step %s: %w", key, err)
	}
	return admin.ViewOf(&st), nil
}

func (s fileSource) events(_ context.Context, after uint64, limit int) ([]journal.Event, error) {
	return s.j.Events(after, limit)
}

func (s fileSource) close() error { return s.j.Close() }

// apiSource reads a running proxy's journal through its admin API.
type apiSource struct{ c *admin.Client }

func (s apiSource) steps(ctx context.Context, f journal.Filter) ([]admin.StepView, error) {
	return s.c.Steps(ctx, f)
}

func (s apiSource) step(ctx context.Context, key string) (admin.StepView, error) {
	return s.c.Step(ctx, key)
}

func (s apiSource) events(ctx context.Context, after uint64, limit int) ([]journal.Event, error) {
	return s.c.Events(ctx, after, limit)
}

func (s apiSource) close() error { return nil }

// lockHint adds what to do to an error opening a journal that a running
// proxy holds.
func lockHint(err error, path string) error {
	return lockedError(err, path, cliLockWait, "use the admin API (--admin URL) while it runs, or stop it first")
}
