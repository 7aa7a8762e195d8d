package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/toolguard/toolguard/config"
)

// childExit carries the exit code of the command exec ran; main exits
// with it and prints nothing more.
type childExit struct{ code int }

func (e *childExit) Error() string { return fmt.Sprintf("command exited with code %d", e.code) }

// execFlags are serve's flags plus the ones that name a running toolguard.
type execFlags struct {
	serve            serveFlags
	proxy, admin, ca string
	summary          bool
}

const execSynopsis = `exec [serve flags] [--proxy URL [--admin URL] [--ca FILE]] -- COMMAND [ARGS...]

Runs COMMAND behind toolguard: with no --proxy, it starts toolguard in this
process with the same flags, environment and config file as serve, and stops
it when COMMAND exits. It sets HTTP_PROXY/HTTPS_PROXY (both cases), NO_PROXY
(host-only entries for the admin listener), a CA bundle of the system roots
plus toolguard's CA in SSL_CERT_FILE, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE and
NODE_EXTRA_CA_CERTS, NODE_USE_ENV_PROXY=1 and, for Node before 24, a preload
in NODE_OPTIONS that routes fetch through the proxy with the program's undici
(npm install undici); TOOLGUARD_RULES_DIR, TOOLGUARD_JOURNAL_PATH (bbolt) and,
with --config, TOOLGUARD_CONFIG, so that toolguard doctor under exec checks
exec's files; forwards signals; exits with COMMAND's exit code and prints a
one-line summary. COMMAND never gets the
operator token: only when admin.agent_token is configured does it get
TOOLGUARD_ADMIN_URL with that token in TOOLGUARD_AGENT_TOKEN (read and
checkpoint, never approve); TOOLGUARD_ADMIN_* variables are not passed on.`

func runExec(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f execFlags
	fs := newFlags("exec", execSynopsis, stdout)
	f.serve.register(fs)
	fs.StringVar(&f.proxy, "proxy", "", "use the toolguard running at this proxy `URL` instead of starting one")
	fs.StringVar(&f.admin, "admin", "", "admin API `URL` of the running toolguard (default $TOOLGUARD_ADMIN_URL or http://ADMIN_LISTEN)")
	fs.StringVar(&f.ca, "ca", "", "CA certificate `file` of the running toolguard (default CA_DIR/ca.pem)")
	fs.BoolVar(&f.summary, "summary", true, "print the one-line summary on exit")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	command := fs.Args()
	if len(command) == 0 {
		return usagef("exec: missing command: toolguard exec [flags] -- COMMAND [ARGS...]")
	}
	var flagErr error
	apply := f.serve.apply(fs)
	cfg, err := config.Load(f.serve.config, os.Environ(), func(c *config.Config) {
		flagErr = apply(c)
		// exec shares the terminal with the command: only warnings, unless
		// a level was asked for.
		if os.Getenv("TOOLGUARD_LOG_LEVEL") == "" && !flagSet(fs, "log-level") && c.Log.Level == config.LevelInfo {
			c.Log.Level = config.LevelWarn
		}
	})
	if flagErr != nil {
		return flagErr
	}
	if err != nil {
		return err
	}
	t, err := f.target(ctx, cfg, stderr)
	if err != nil {
		return err
	}
	defer t.stop()
	t.where = toolguardFiles{rulesDir: absPath(cfg.Rules.Dir)}
	if cfg.Journal.Backend == config.BackendBolt {
		t.where.journal = absPath(cfg.Journal.Path)
	}
	if f.serve.config != "" {
		t.where.config = absPath(f.serve.config)
	}
	return execCommand(ctx, t, command, stdout, stderr, f.summary)
}

// flagSet reports whether the flag was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// execCommand runs command with the agent's environment and maps its
// exit into a childExit.
func execCommand(ctx context.Context, t *target, command []string, stdout, stderr io.Writer, summary bool) error {
	dir, err := os.MkdirTemp("", "toolguard-exec-")
	if err != nil {
		return fmt.Errorf("exec: %w", err)
	}
	defer os.RemoveAll(dir)
	bundle, err := writeBundle(filepath.Join(dir, "ca-bundle.pem"), t.caFile, os.Getenv("SSL_CERT_FILE"))
	if err != nil {
		return err
	}
	preload, err := writeNodePreload(dir)
	if err != nil {
		return err
	}
	before, _ := t.counts(ctx)
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	cmd.Env = agentEnv(os.Environ(), agentSetup{proxyURL: t.proxyURL, admin: t.agent(), bundle: bundle, nodePreload: preload,
		where: t.where})
	code, err := runForwardingSignals(cmd)
	if err != nil {
		fmt.Fprintf(stderr, "toolguard: exec %s: %v\n", command[0], err)
	}
	if summary {
		// A signal that ended the command has cancelled ctx; the summary
		// is still wanted.
		after, cerr := t.counts(context.WithoutCancel(ctx))
		line := summaryLine(before, after, cerr, t.holdsCommand())
		if nodeFetchBypassed(dir) {
			line += nodeBypassNote
		}
		fmt.Fprintln(stderr, line)
	}
	if code != 0 {
		return &childExit{code: code}
	}
	return nil
}

// runForwardingSignals runs cmd, passes the signals a supervisor sends on
// to it, and returns its exit code (128+N when signal N ended it; 127 when
// it could not start).
func runForwardingSignals(cmd *exec.Cmd) (int, error) {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return 127, err
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				cmd.Process.Signal(s)
			case <-done:
				return
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return 1, err
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return cmd.ProcessState.ExitCode(), nil
}

// target is the toolguard a command runs behind: started here or running.
type target struct {
	proxyURL, adminURL, caFile string
	agentToken                 string // admin.agent_token; "" when none is configured
	journal                    string // set when started here
	// where are exec's rules, journal and config file, for the command's
	// toolguard commands.
	where  toolguardFiles
	counts func(ctx context.Context) (callCounts, error)
	stop   func()
}

// agent is what the command may know of the admin API: nothing unless an
// agent token is configured.
func (t *target) agent() agentAdmin {
	if t.agentToken == "" {
		return agentAdmin{}
	}
	return agentAdmin{url: agentAdminURL(t.adminURL), token: t.agentToken}
}

func (t *target) holdsCommand() string {
	if t.journal != "" {
		return "toolguard review ls --journal " + t.journal
	}
	return "toolguard review ls --admin " + t.adminURL
}

// target starts toolguard in this process, or describes the running one
// that --proxy names.
func (f *execFlags) target(ctx context.Context, cfg config.Config, stderr io.Writer) (*target, error) {
	if f.proxy != "" {
		return f.running(cfg)
	}
	log := newLogger(stderr, cfg.Log)
	// The command's signals are forwarded to it; toolguard stops when the
	// command has exited, not on the signal.
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	ready := make(chan serving, 1)
	done := make(chan error, 1)
	go func() {
		done <- serveWith(sctx, cfg, log, serveOut{stdout: io.Discard, notice: stderr, hideToken: true}, func(s serving) { ready <- s })
	}()
	select {
	case s := <-ready:
		admin := "http://" + dialable(s.adminAddr)
		return &target{proxyURL: "http://" + dialable(s.proxyAddr), adminURL: admin, caFile: s.caFile, journal: absPath(cfg.Journal.Path),
			agentToken: cfg.Admin.AgentToken,
			counts:     func(context.Context) (callCounts, error) { return countsFrom(s.metrics.Handler(), "") },
			stop: func() {
				cancel()
				if err := <-done; err != nil {
					log.Error("toolguard stopped with an error", "error", err)
				}
			}}, nil
	case err := <-done:
		cancel()
		return nil, err
	}
}

// running describes a toolguard started elsewhere.
func (f *execFlags) running(cfg config.Config) (*target, error) {
	u, err := url.Parse(f.proxy)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, usagef("exec: --proxy: want a URL such as http://127.0.0.1:8480 (got %q)", f.proxy)
	}
	admin := f.admin
	if admin == "" {
		admin = os.Getenv("TOOLGUARD_ADMIN_URL")
	}
	if admin == "" {
		admin = "http://" + dialable(cfg.Admin.Listen)
	}
	ca := f.ca
	if ca == "" {
		ca = filepath.Join(cfg.CA.Dir, "ca.pem")
	}
	if _, err := os.Stat(ca); err != nil {
		return nil, fmt.Errorf("exec: toolguard's CA certificate: %w (name it with --ca)", err)
	}
	admin = strings.TrimRight(admin, "/")
	token, _, err := configToken(cfg)
	if err != nil {
		return nil, err
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}
	return &target{proxyURL: f.proxy, adminURL: admin, caFile: absPath(ca), agentToken: cfg.Admin.AgentToken,
		counts: func(ctx context.Context) (callCounts, error) {
			return countsFromURL(ctx, client, admin+"/metrics", token)
		},
		stop: func() {}}, nil
}

// agentAdminURL is the admin URL the command is given. An admin listener
// on 127.0.0.1, ::1 or every address is named localhost, so that its
// NO_PROXY entry (host-only: clients ignore ports there) does not also
// send the command's calls to other services on 127.0.0.1 around the
// proxy.
func agentAdminURL(admin string) string {
	u, err := url.Parse(admin)
	if err != nil {
		return admin
	}
	switch u.Hostname() {
	case "127.0.0.1", "::1", "0.0.0.0", "::":
		u.Host = net.JoinHostPort("localhost", u.Port())
		return u.String()
	}
	return admin
}

// dialable turns a listen address into one a client can dial: an
// unspecified host becomes 127.0.0.1.
func dialable(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}
