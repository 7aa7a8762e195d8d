package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/toolguard/toolguard/config"
	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/proxy"
)

// source is where inspection commands read the journal from: the running
// proxy's admin API, or a stopped proxy's journal file.
type source interface {
	steps(ctx context.Context, f journal.Filter) ([]proxy.StepView, error)
	step(ctx context.Context, key string) (proxy.StepView, error)
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
	return f.client(), nil
}

func (f *sourceFlags) client() *adminClient {
	base := f.admin
	if base == "" {
		base = os.Getenv("TOOLGUARD_ADMIN_URL")
	}
	if base == "" {
		base = "http://127.0.0.1:8481"
	}
	token, looked, err := f.operatorToken()
	return &adminClient{base: strings.TrimRight(base, "/"), token: token, tokenErr: err, looked: looked,
		http: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: nil}}}
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
	token, err = proxy.ReadToken(path)
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

func (s fileSource) steps(_ context.Context, f journal.Filter) ([]proxy.StepView, error) {
	steps, err := s.j.List(f)
	if err != nil {
		return nil, err
	}
	out := make([]proxy.StepView, len(steps))
	for i := range steps {
		out[i] = proxy.ViewOf(&steps[i])
	}
	return out, nil
}

func (s fileSource) step(_ context.Context, key string) (proxy.StepView, error) {
	st, err := proxy.FindStep(s.j, key)
	if err != nil {
		return proxy.StepView{}, fmt.Errorf("step %s: %w", key, err)
	}
	return proxy.ViewOf(&st), nil
}

func (s fileSource) events(_ context.Context, after uint64, limit int) ([]journal.Event, error) {
	return s.j.Events(after, limit)
}

func (s fileSource) close() error { return s.j.Close() }

// adminClient talks to the admin API.
type adminClient struct {
	base     string
	token    string
	tokenErr error  // why the token could not be read; returned by every request
	looked   string // the generated token file looked for in vain, for the 401 hint
	http     *http.Client
}

func (c *adminClient) close() error { return nil }

func (c *adminClient) steps(ctx context.Context, f journal.Filter) ([]proxy.StepView, error) {
	q := url.Values{}
	if f.Status != journal.StatusUnknown {
		q.Set("status", f.Status.String())
	}
	if f.HoldSet {
		h := f.Hold.String()
		if f.Hold == journal.HoldNone {
			h = "none"
		}
		q.Set("hold", h)
	}
	if f.Workflow != "" {
		q.Set("workflow", f.Workflow)
	}
	// An answer holds at most proxy.MaxListLimit steps: follow its next
	// cursor until f.Limit steps are here or none are left.
	var steps []proxy.StepView
	for {
		var out struct {
			Steps []proxy.StepView `json:"steps"`
			Next  string           `json:"next"`
		}
		if f.Limit > 0 {
			q.Set("limit", strconv.Itoa(f.Limit-len(steps)))
		}
		if err := c.do(ctx, http.MethodGet, "/v1/steps?"+q.Encode(), nil, &out); err != nil {
			return steps, err
		}
		steps = append(steps, out.Steps...)
		if out.Next == "" || (f.Limit > 0 && len(steps) >= f.Limit) {
			return steps, nil
		}
		q.Set("cursor", out.Next)
	}
}

func (c *adminClient) step(ctx context.Context, key string) (proxy.StepView, error) {
	var v proxy.StepView
	err := c.do(ctx, http.MethodGet, "/v1/steps/"+url.PathEscape(key), nil, &v)
	return v, err
}

func (c *adminClient) events(ctx context.Context, after uint64, limit int) ([]journal.Event, error) {
	var out struct {
		Events []journal.Event `json:"events"`
	}
	err := c.do(ctx, http.MethodGet, fmt.Sprintf("/v1/events?after=%d&limit=%d", after, limit), nil, &out)
	return out.Events, err
}

// post sends an operator decision (approve, resolve) about the step of key,
// which may be abbreviated: a key shorter than a full one is expanded by
// GET /v1/steps/{key} first, and the decision names the full key.
func (c *adminClient) post(ctx context.Context, key, verb string, body any, out any) error {
	if len(key) < fullKeyLen {
		st, err := c.step(ctx, key)
		if err != nil {
			return err
		}
		key = st.Key
	}
	return c.do(ctx, http.MethodPost, "/v1/steps/"+url.PathEscape(key)+"/"+verb, body, out)
}

// fullKeyLen is the length of a key: sha256 in hex.
const fullKeyLen = 64

// do sends one admin request and decodes its JSON answer into out. A
// problem answer becomes an error carrying its detail.
func (c *adminClient) do(ctx context.Context, method, path string, body, out any) error {
	if c.tokenErr != nil {
		return c.tokenErr
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return fmt.Errorf("admin request: %w", err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("reach admin API at %s: %w (is toolguard serve running? or use --journal FILE)", c.base, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("read admin answer: %w", err)
	}
	if resp.StatusCode >= 300 {
		var p proxy.Problem
		if json.Unmarshal(data, &p) == nil && p.Detail != "" {
			if resp.StatusCode == http.StatusUnauthorized {
				p.Detail += c.unauthorizedHint()
			}
			return &adminError{status: resp.StatusCode, detail: p.Detail}
		}
		return &adminError{status: resp.StatusCode, detail: strings.TrimSpace(string(data))}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decode admin answer: %w", err)
	}
	return nil
}

// stream GETs a large admin answer (a backup, an export) without the
// client's timeout; the caller closes the body.
func (c *adminClient) stream(ctx context.Context, path string) (io.ReadCloser, error) {
	if c.tokenErr != nil {
		return nil, c.tokenErr
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return nil, fmt.Errorf("admin request: %w", err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	hc := *c.http
	hc.Timeout = 0 // a large journal takes a while
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reach admin API at %s: %w", c.base, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, &adminError{status: resp.StatusCode, detail: strings.TrimSpace(string(b))}
	}
	return resp.Body, nil
}

// unauthorizedHint says where the CLI looks for the operator token.
func (c *adminClient) unauthorizedHint() string {
	h := " (set TOOLGUARD_ADMIN_TOKEN or TOOLGUARD_ADMIN_TOKEN_FILE, or pass --token"
	if c.looked != "" {
		h += "; no generated token at " + c.looked + ": point --config or TOOLGUARD_JOURNAL_PATH at the proxy's journal"
	}
	return h + ")"
}

// adminError is a non-2xx admin answer.
type adminError struct {
	status int
	detail string
}

func (e *adminError) Error() string {
	return fmt.Sprintf("admin API: %d %s: %s", e.status, http.StatusText(e.status), e.detail)
}

// lockHint adds what to do to an error opening a journal that a running
// proxy holds.
func lockHint(err error, path string) error {
	return lockedError(err, path, cliLockWait, "use the admin API (--admin URL) while it runs, or stop it first")
}
