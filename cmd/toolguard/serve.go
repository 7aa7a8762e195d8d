package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/net/netutil"

	"github.com/toolguard/toolguard/admin"
	"github.com/toolguard/toolguard/config"
	"github.com/toolguard/toolguard/console"
	"github.com/toolguard/toolguard/internal/wire"
	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/journal/bolt"
	"github.com/toolguard/toolguard/metrics"
	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/proxy"
	"github.com/toolguard/toolguard/rules"
	"github.com/toolguard/toolguard/telemetry"
	"github.com/toolguard/toolguard/tlsca"
)

// serveFlags are the flags of serve; only the ones set override the
// environment and the file.
type serveFlags struct {
	config, listen, adminListen, rulesDir, journal, caDir, unmatched, logLevel, logFormat string
}

func (f *serveFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.config, "config", "", "config `file` (YAML); settings also come from TOOLGUARD_* variables")
	fs.StringVar(&f.listen, "listen", "", "proxy `address` (default 127.0.0.1:8480)")
	fs.StringVar(&f.adminListen, "admin-listen", "", "admin API `address` (default 127.0.0.1:8481)")
	fs.StringVar(&f.rulesDir, "rules", "", "rules `dir`ectory (default ./rules)")
	fs.StringVar(&f.journal, "journal", "", "journal `file` (default ./toolguard.db)")
	fs.StringVar(&f.caDir, "ca-dir", "", "CA `dir`ectory (default ./ca)")
	fs.StringVar(&f.unmatched, "unmatched", "", "`policy` for calls no rule matches: passthrough, guard or reject")
	fs.StringVar(&f.logLevel, "log-level", "", "debug, info, warn or error")
	fs.StringVar(&f.logFormat, "log-format", "", "auto, json, text or tint")
}

// apply overrides c with the flags that were set.
func (f *serveFlags) apply(fs *flag.FlagSet) func(*config.Config) error {
	return func(c *config.Config) error {
		var err error
		fs.Visit(func(fl *flag.Flag) {
			if err != nil {
				return
			}
			switch fl.Name {
			case "listen":
				c.Listen = f.listen
			case "admin-listen":
				c.Admin.Listen = f.adminListen
			case "rules":
				c.Rules.Dir = f.rulesDir
			case "journal":
				c.Journal.Path = f.journal
			case "ca-dir":
				c.CA.Dir = f.caDir
			case "unmatched":
				err = c.Unmatched.UnmarshalText([]byte(f.unmatched))
			case "log-level":
				err = c.Log.Level.UnmarshalText([]byte(f.logLevel))
			case "log-format":
				err = c.Log.Format.UnmarshalText([]byte(f.logFormat))
			}
			if err != nil { // a bad value is a configuration error: one line, exit 2
				err = &config.Error{Field: "--" + fl.Name, Value: fl.Value.String(), Msg: err.Error(), Err: err}
			}
		})
		return err
	}
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f serveFlags
	fs := newFlags("serve", "serve [--config FILE] [flags]", stdout)
	f.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("serve: unexpected argument %q", fs.Arg(0))
	}
	var flagErr error
	apply := f.apply(fs)
	cfg, err := config.Load(f.config, os.Environ(), func(c *config.Config) { flagErr = apply(c) })
	if flagErr != nil {
		return flagErr
	}
	if err != nil {
		return err
	}
	log := newLogger(stderr, cfg.Log)
	for _, w := range config.UnknownEnv(os.Environ()) {
		log.Warn(w)
	}
	return serve(ctx, cfg, log, serveOut{stdout: stdout, notice: stderr})
}

// serve runs the proxy and the admin API until ctx ends, then drains.
func serve(ctx context.Context, cfg config.Config, log *slog.Logger, out serveOut) error {
	return serveWith(ctx, cfg, log, out, nil)
}

// serving is what a started serve tells its caller (exec).
type serving struct {
	proxyAddr, adminAddr, caFile string
	metrics                      *metrics.Metrics
}

// serveWith is serve that calls ready, when not nil, once both listeners
// accept connections.
func serveWith(ctx context.Context, cfg config.Config, log *slog.Logger, out serveOut, ready func(serving)) error {
	set, err := rules.Load(cfg.Rules.Dir)
	if err != nil {
		return fmt.Errorf("load rules from %s:\n%w", cfg.Rules.Dir, err)
	}
	if _, err := wire.MCPServers(cfg, set); err != nil {
		return err // before anything is created
	}
	if len(set.APIs) == 0 {
		log.Warn("NO ROUTES: the rules directory holds no rule files (*.yaml, *.yml); every call follows the unmatched policy",
			"rules_dir", absPath(cfg.Rules.Dir), "unmatched", cfg.Unmatched.String())
	}
	for _, w := range set.Warnings() {
		log.Warn("rule file: " + w)
	}
	if observed := observedAPIs(cfg.Guard.Mode, set); len(observed) > 0 {
		log.Warn("OBSERVE MODE: calls of these APIs are forwarded untouched, never replayed, held or refused; toolguard report shows what enforcement would have done",
			"apis", strings.Join(observed, ","), "guard_mode", cfg.Guard.Mode.String())
	}
	ca, created, err := tlsca.LoadOrCreate(cfg.CA.Dir)
	if err != nil {
		return err
	}
	if created {
		log.Info("created CA", "cert", ca.CertFile)
	}
	secret, err := loadSecret(cfg)
	if err != nil {
		return err
	}
	metrics := metrics.New()
	tracing, err := startTracing(cfg, log, metrics)
	if err != nil {
		return err
	}
	defer func() { stopTracing(tracing, log, time.Now().Add(tracingGrace)) }() // after an error; a drain stops it first
	j, maint, nb, err := openJournal(ctx, cfg, log, metrics, secret)
	if err != nil {
		return err
	}
	defer j.Close()
	logStartup(log, j, set)
	if err := adminAuth(&cfg, log, out); err != nil {
		return err
	}

	// Listen first: the proxy refuses requests aimed at its own listeners.
	proxyLn, adminLn, err := listen(cfg)
	if err != nil {
		return err
	}
	srv, err := wire.Proxy(cfg, wire.Deps{Rules: set, Journal: j, Maintainer: maint, Secret: secret, CA: ca, Metrics: metrics, Logger: log,
		SelfAddrs: []string{proxyLn.Addr().String(), adminLn.Addr().String()}, Tracer: tracing.Tracer()})
	if err != nil {
		proxyLn.Close()
		adminLn.Close()
		return err
	}
	defer srv.Close()
	// Before anything is served: a new webhook's cursor starts at the
	// feed's end, before the first hold this process journals.
	stopNotify, err := startNotify(ctx, cfg, j, nb, srv, metrics, log, adminLn.Addr().String())
	if err != nil {
		proxyLn.Close()
		adminLn.Close()
		return err
	}
	defer stopNotify() // before the journal closes
	srv.StartSweeper(0)
	srv.StartResolver(0)
	if n, err := srv.ResumeVerifications(); err != nil {
		return fmt.Errorf("resume verifications: %w", err)
	} else if n > 0 {
		log.Info("resumed pending verifications", "count", n)
	}
	api := admin.New(admin.Options{Journal: j, Maintainer: maint, Proxy: srv, Token: cfg.Admin.Token, AgentToken: cfg.Admin.AgentToken,
		InsecureNoAuth: cfg.Admin.InsecureNoAuth, Logger: log, Metrics: metrics.Handler(),
		UI: console.Handler(console.Options{Version: version})})
	proxyHTTP, adminHTTP := wire.HTTPServer(cfg, srv.Handler(), log), wire.HTTPServer(cfg, api, log)
	errc := make(chan error, 2)
	go func() { errc <- serveOn(proxyHTTP, netutil.LimitListener(proxyLn, cfg.Limits.MaxConnections)) }()
	go func() { errc <- serveOn(adminHTTP, adminLn) }()

	fmt.Fprintf(out.stdout, "proxy: http://%s\nadmin: http://%s\nca:    %s\n", proxyLn.Addr(), adminLn.Addr(), absPath(ca.CertFile))
	warnExposed(log, proxyLn.Addr())
	if ready != nil {
		ready(serving{proxyAddr: proxyLn.Addr().String(), adminAddr: adminLn.Addr().String(), caFile: absPath(ca.CertFile), metrics: metrics})
	}
	log.Info("toolguard serving", "proxy", proxyLn.Addr().String(), "admin", adminLn.Addr().String(), "ca", absPath(ca.CertFile), "journal", j.Path())

	// SIGHUP drains as SIGTERM does: rules and configuration are read at
	// start only, so a restart (which drains) is how to load new ones.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	select {
	case <-ctx.Done():
	case <-hup:
		log.Info("SIGHUP: draining and stopping, as on SIGTERM (rules and configuration are loaded at start; restart to load new ones)")
	case err := <-errc:
		return err
	}
	return shutdown(cfg, log, srv, api, tracing, proxyHTTP, adminHTTP)
}

// openBolt checks the journal read-only first (journal.check_on_start),
// so that a damaged file is refused before anything is written to it, then
// opens it for writing. A file of an older layout cannot be read before its
// upgrade, which Open makes: it is checked right after. Each open waits
// journal.open_timeout for the file lock; the second finds it held only when
// another process took it in between.
func openBolt(cfg config.Config, log *slog.Logger, metrics *metrics.Metrics) (*bolt.Journal, error) {
	path := cfg.Journal.Path
	// bbolt gives up one lock retry (50 ms) before its Options.Timeout: ask
	// for that much more, so that the wait is at least the one configured.
	timeout := cfg.Journal.OpenTimeout + boltLockRetry
	locked := func(err error) error {
		return lockedError(err, path, cfg.Journal.OpenTimeout,
			"stop it, or give this one another journal.path; a longer wait is journal.open_timeout (TOOLGUARD_JOURNAL_OPEN_TIMEOUT)")
	}
	checkAfter := false
	if fi, err := os.Stat(path); err == nil && cfg.Journal.CheckOnStart.ShouldCheck(fi.Size()) {
		started := time.Now()
		problems, err := checkFile(path, timeout)
		switch {
		case errors.Is(err, bolt.ErrNeedsUpgrade):
			checkAfter = true
		case errors.Is(err, bolt.ErrLocked):
			return nil, locked(err)
		case err != nil:
			return nil, fmt.Errorf("%w; it was left untouched: restore it from a backup or move it aside (see docs/operations.md)", err)
		case len(problems) > 0:
			return nil, refuseDamaged(path, problems, "it was left untouched")
		default:
			log.Info("journal checked", "path", path, "duration", time.Since(started))
		}
	}
	j, err := bolt.Open(path, bolt.Options{Timeout: timeout, Logger: log, OnCommit: metrics.ObserveCommit,
		ResidentBudget: residentBudget(cfg.Journal.ResidentBudget)})
	if err != nil {
		return nil, locked(err)
	}
	if !checkAfter {
		return j, nil
	}
	started := time.Now()
	if problems := j.Check(); len(problems) > 0 {
		j.Close()
		return nil, refuseDamaged(path, problems, "it was upgraded but not served")
	}
	log.Info("journal checked", "path", path, "duration", time.Since(started))
	return j, nil
}

// residentBudget is journal.resident_budget as bolt.Options takes it, where
// never dropping is negative, not 0.
func residentBudget(b config.ByteSize) int64 {
	if b == 0 {
		return -1
	}
	return int64(b)
}

func refuseDamaged(path string, problems []error, what string) error {
	return fmt.Errorf("journal %s fails its consistency check: %v (%d problems; run toolguard journal check --journal %s); %s: restore it from a backup or move it aside (see docs/operations.md)",
		path, problems[0], len(problems), path, what)
}

func listen(cfg config.Config) (proxyLn, adminLn net.Listener, err error) {
	if proxyLn, err = net.Listen("tcp", cfg.Listen); err != nil {
		return nil, nil, fmt.Errorf("listen: %w", err)
	}
	if adminLn, err = net.Listen("tcp", cfg.Admin.Listen); err != nil {
		proxyLn.Close()
		return nil, nil, fmt.Errorf("admin listen: %w", err)
	}
	return proxyLn, adminLn, nil
}

func serveOn(s *http.Server, ln net.Listener) error {
	if err := s.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve %s: %w", ln.Addr(), err)
	}
	return nil
}

// shutdown drains: readiness turns 503, new guarded calls are refused,
// calls in flight get the drain timeout to finish and commit. A second
// signal exits at once; the journal is consistent at every commit.
func shutdown(cfg config.Config, log *slog.Logger, srv *proxy.Server, api *admin.API, tracing *telemetry.Provider, servers ...*http.Server) error {
	log.Info("shutting down: draining calls in flight", "drain_timeout", cfg.Shutdown.DrainTimeout)
	api.SetReady(false)
	srv.SetDraining(true)
	again := make(chan os.Signal, 1)
	signal.Notify(again, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(again)
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Shutdown.DrainTimeout)
	defer cancel()
	go func() {
		select {
		case <-again:
			log.Warn("second signal: exiting now")
			os.Exit(1)
		case <-ctx.Done():
		}
	}()
	if err := srv.Drain(ctx); err != nil {
		log.Warn("drain timed out; calls still in flight stay started and are resolved after restart", "error", err)
	}
	for _, s := range servers {
		s.Shutdown(ctx)
	}
	// The spans of the last calls go out within what is left of the drain
	// timeout; what is still queued then is dropped.
	if deadline, ok := ctx.Deadline(); ok {
		stopTracing(tracing, log, deadline)
	}
	log.Info("stopped")
	return nil
}

// warnExposed warns when the proxy listens beyond loopback: anyone who
// can reach it may send calls through it, with toolguard's egress.
func warnExposed(log *slog.Logger, addr net.Addr) {
	if ta, ok := addr.(*net.TCPAddr); ok && !ta.IP.IsLoopback() {
		log.Warn("the proxy listens beyond loopback: anyone who can reach this address may send calls through it; listen on 127.0.0.1 unless the agent runs on another host, and then restrict who can connect",
			"listen", addr.String())
	}
}

// secretPath is where the HMAC secret lives: beside the journal.
func secretPath(journalPath string) string { return journalPath + ".secret" }

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// observedAPIs names the APIs whose calls are observed, not guarded:
// their rule file's guard mode, else the global one.
func observedAPIs(global policy.Mode, set *rules.Set) []string {
	var out []string
	for _, a := range set.APIs {
		if a.GuardMode(global) == policy.ModeObserve {
			out = append(out, a.Name)
		}
	}
	return out
}

// logStartup writes one line summarising what the journal holds.
func logStartup(log *slog.Logger, j journal.Store, set *rules.Set) {
	routes := 0
	for _, a := range set.APIs {
		routes += len(a.Routes)
	}
	ambiguous, verifying, held := startupCounts(j)
	log.Info("journal opened", "path", j.Path(), "epoch", j.Epoch(), "apis", len(set.APIs), "routes", routes,
		"ambiguous", ambiguous, "awaiting_verification", verifying, "held", held)
}

// startupCounts reads what the journal holds that needs attention, without
// counting every step: every started step belongs to an earlier epoch now,
// so it is ambiguous.
func startupCounts(j journal.Store) (ambiguous, verifying, held int) {
	c, err := j.CountOpen()
	if err != nil {
		return 0, 0, 0
	}
	pending, _ := j.List(journal.Filter{VerifyPending: true, Limit: 100000})
	for _, n := range c.Held {
		held += n
	}
	return c.Started, len(pending), held
}
