package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/toolguard/toolguard/config"
	"github.com/toolguard/toolguard/proxy"
	"github.com/toolguard/toolguard/rules"
)

// finding is one line of doctor's report.
type finding struct {
	mark string // ✔, ✗ or · (not checked)
	what string
	fix  string
}

const (
	markOK   = "✔"
	markFail = "✗"
	markSkip = "·"
)

// maxClockSkew is the largest difference doctor accepts between this
// machine's clock and the proxy's.
const maxClockSkew = 5 * time.Second

func runDoctor(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f serveFlags
	var admin string
	fs := newFlags("doctor", "doctor [--config FILE] [serve flags] [--admin URL]\n\nChecks this shell the way a support engineer would: proxy variables, the CA\nas curl, Python, Node and Go see it, Node's built-in fetch, the rules, the\njournal, the admin API and the clock. --config defaults to $TOOLGUARD_CONFIG\n(toolguard exec sets it). Exits 1 when anything fails.", stdout)
	f.register(fs)
	fs.StringVar(&admin, "admin", "", "admin API `URL` (default $TOOLGUARD_ADMIN_URL or http://ADMIN_LISTEN)")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if f.config == "" {
		// toolguard exec names its config file for the command.
		f.config = os.Getenv("TOOLGUARD_CONFIG")
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
	if admin == "" {
		admin = os.Getenv("TOOLGUARD_ADMIN_URL")
	}
	if admin == "" {
		admin = "http://" + dialable(cfg.Admin.Listen)
	}
	d := &doctor{env: envMap(os.Environ()), cfg: cfg, admin: strings.TrimRight(admin, "/")}
	if printFindings(stdout, d.run(ctx)) > 0 {
		return &childExit{code: 1}
	}
	return nil
}

// printFindings writes one line per finding, and its fix below it, and
// returns how many failed.
func printFindings(w io.Writer, findings []finding) (failed int) {
	for _, fd := range findings {
		fmt.Fprintf(w, "%s %s\n", fd.mark, fd.what)
		if fd.fix != "" {
			fmt.Fprintf(w, "    fix: %s\n", fd.fix)
		}
		if fd.mark == markFail {
			failed++
		}
	}
	return failed
}

// doctor runs the checks against an environment and a configuration.
type doctor struct {
	env   map[string]string
	cfg   config.Config
	admin string
	probe proxyProbe
	// proxyNow is the proxy's clock, read from the check host or the
	// admin API's Date at proxyAt on this machine's clock.
	proxyNow, proxyAt time.Time
}

// proxyProbe is what answers where the proxy variables point and at the
// admin URL, learnt before the client checks: their fixes depend on it.
type proxyProbe struct {
	proxyURL string // HTTPS_PROXY or another proxy variable; "" when none is set
	answered bool   // toolguard answered the check host through proxyURL
	adminUp  bool   // the admin API answered, whatever its status
}

func envMap(environ []string) map[string]string {
	m := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

func (d *doctor) run(ctx context.Context) []finding {
	d.probeProxy(ctx)
	admin := d.adminAPI(ctx) // before the clients: their fixes depend on it
	out := d.proxyVars()
	out = append(out, d.noProxy()...)
	out = append(out, d.trustGo(ctx), d.trustCurl(ctx), d.trustPython(ctx), d.trustNode(ctx), d.nodeFetch(ctx))
	out = append(out, d.rules(), d.journal(), admin)
	if admin.mark == markOK {
		if tok := d.adminToken(ctx); tok.what != "" {
			out = append(out, tok)
		}
	}
	return append(out, d.clock())
}

func ok(format string, args ...any) finding {
	return finding{mark: markOK, what: fmt.Sprintf(format, args...)}
}

func fail(fix, format string, args ...any) finding {
	return finding{mark: markFail, what: fmt.Sprintf(format, args...), fix: fix}
}

const execFix = "run the agent with `toolguard exec -- COMMAND`, which sets every variable"

func (d *doctor) rules() finding {
	dir := d.cfg.Rules.Dir
	set, err := rules.Load(dir)
	if err != nil {
		return fail("run `toolguard rules check "+dir+"` for every problem with file:line:col", "rules: %s does not load: %s", dir, lastLine(err.Error()))
	}
	routes, mcp := 0, 0
	for _, a := range set.APIs {
		routes += len(a.Routes)
		if a.MCP != nil {
			mcp++
		}
	}
	if routes == 0 && mcp == 0 {
		// serve warns NO ROUTES and rules check fails: nothing is guarded.
		return fail("add a rule file per API to "+dir+" (a pack from rules/packs/, or `toolguard rules init`), or point --rules / TOOLGUARD_RULES_DIR at yours",
			"rules: %s, 0 routes in %s: toolguard guards nothing", plural(len(set.APIs), "API"), dir)
	}
	return ok("rules: %s, %s in %s", plural(len(set.APIs), "API"), plural(routes, "route"), dir)
}

// journal checks that the journal's file (or its directory, before the
// first start) can be written, without opening it: a running proxy holds
// its lock.
func (d *doctor) journal() finding {
	path := d.cfg.Journal.Path
	if fi, err := os.Stat(path); err == nil {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return fail("give the user that runs toolguard write access to "+path, "journal: %s is not writable: %v", path, err)
		}
		f.Close()
		return ok("journal: %s is writable (%.1f MiB)", path, float64(fi.Size())/(1<<20))
	}
	dir := filepath.Dir(path)
	probe, err := os.CreateTemp(dir, ".toolguard-doctor-")
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fail("create "+dir+" and give the user that runs toolguard write access to it", "journal: cannot create %s: %v", path, err)
	}
	probe.Close()
	os.Remove(probe.Name())
	return ok("journal: %s does not exist yet; its directory is writable", path)
}

func (d *doctor) adminAPI(ctx context.Context) finding {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}
	req, _ := http.NewRequestWithContext(ctx, "GET", d.admin+"/readyz", nil)
	resp, err := c.Do(req)
	if err != nil {
		fix := "start `toolguard serve`, or set TOOLGUARD_ADMIN_URL to its admin listener"
		if d.probe.answered {
			fix = "toolguard answers at " + d.probe.proxyURL + ": set TOOLGUARD_ADMIN_URL (or --admin) to its admin listener (serve prints it as admin:)"
		}
		return fail(fix, "admin API: %s is not reachable: %s", d.admin, shortErr(err))
	}
	resp.Body.Close()
	d.probe.adminUp = true
	if d.proxyNow.IsZero() {
		if t, err := http.ParseTime(resp.Header.Get("Date")); err == nil {
			d.sawProxyClock(t)
		}
	}
	if resp.StatusCode != http.StatusOK {
		return fail("see toolguard's log: it is starting, draining or cannot use its journal", "admin API: %s/readyz answered %s", d.admin, resp.Status)
	}
	return ok("admin API: %s is ready", d.admin)
}

// probeProxy calls the check host over plain HTTP, which needs no trust,
// through the proxy the variables name, and reads the proxy's clock there.
func (d *doctor) probeProxy(ctx context.Context) {
	for _, n := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"} {
		if d.probe.proxyURL = d.env[n]; d.probe.proxyURL != "" {
			break
		}
	}
	u, err := url.Parse(d.probe.proxyURL)
	if d.probe.proxyURL == "" || err != nil {
		return
	}
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(u)}}
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+proxy.CheckHost+"/", nil)
	resp, err := c.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	if resp.Header.Get(proxy.HeaderCheck) != "ok" {
		return
	}
	d.probe.answered = true
	var body struct{ Time time.Time }
	if json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&body) == nil && !body.Time.IsZero() {
		d.sawProxyClock(body.Time)
	}
}

// sawProxyClock records the proxy's clock and when this machine read it.
func (d *doctor) sawProxyClock(t time.Time) {
	d.proxyNow, d.proxyAt = t, time.Now()
}

// adminToken checks TOOLGUARD_ADMIN_TOKEN (or, under toolguard exec,
// TOOLGUARD_AGENT_TOKEN) against the admin API, which the CLI's inspection
// commands use; no finding when no token is set and none is needed.
func (d *doctor) adminToken(ctx context.Context) finding {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}
	req, _ := http.NewRequestWithContext(ctx, "GET", d.admin+"/v1/whoami", nil)
	name := "TOOLGUARD_ADMIN_TOKEN"
	tok := d.env[name]
	if tok == "" && d.env["TOOLGUARD_AGENT_TOKEN"] != "" {
		name = "TOOLGUARD_AGENT_TOKEN"
		tok = d.env[name]
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := c.Do(req)
	if err != nil {
		return fail("see toolguard's log", "admin token: %s", shortErr(err))
	}
	defer resp.Body.Close()
	var who struct{ Role string }
	json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&who)
	switch {
	case resp.StatusCode == http.StatusUnauthorized && tok == "":
		return fail("export TOOLGUARD_ADMIN_TOKEN (the operator token, or the agent token to read only)", "admin token: the admin API needs one and TOOLGUARD_ADMIN_TOKEN is not set")
	case resp.StatusCode == http.StatusUnauthorized:
		return fail("set TOOLGUARD_ADMIN_TOKEN to admin.token (or admin.agent_token to read only)", "admin token: %s is not accepted", name)
	case resp.StatusCode != http.StatusOK:
		return fail("see toolguard's log", "admin token: %s/v1/whoami answered %s", d.admin, resp.Status)
	case tok == "":
		return finding{}
	}
	return ok("admin token: %s is the %s token", name, who.Role)
}

// clock compares this machine's clock with the proxy's: leases,
// Retry-After and retention all rely on it.
func (d *doctor) clock() finding {
	now := time.Now()
	if now.Year() < 2024 {
		return fail("set the system clock (NTP)", "clock: %s is in the past", now.UTC().Format(time.RFC3339))
	}
	if d.proxyNow.IsZero() {
		return finding{mark: markSkip, what: "clock: the proxy could not be reached to compare clocks"}
	}
	return clockFinding(d.proxyAt, d.proxyNow)
}

// clockFinding compares this machine's clock with the proxy's.
func clockFinding(now, proxyNow time.Time) finding {
	skew := now.Sub(proxyNow)
	if skew < 0 {
		skew = -skew
	}
	if skew > maxClockSkew {
		return fail("synchronise both clocks with NTP", "clock: this machine and the proxy differ by %s (more than %s)", skew.Round(time.Second), maxClockSkew)
	}
	return ok("clock: in step with the proxy (within %s)", maxClockSkew)
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
