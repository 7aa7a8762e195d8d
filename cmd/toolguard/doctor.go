package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
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
	fs := newFlags("doctor", "doctor [--config FILE] [serve flags] [--admin URL]\n\nChecks this shell the way a support engineer would: proxy variables, the CA\nas curl, Python, Node and Go see it, the rules, the journal, the admin API\nand the clock. Exits 1 when anything fails.", stdout)
	f.register(fs)
	fs.StringVar(&admin, "admin", "", "admin API `URL` (default $TOOLGUARD_ADMIN_URL or http://ADMIN_LISTEN)")
	if err := parseNoArgs(fs, args); err != nil {
		return err
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
	failed := 0
	for _, fd := range d.run(ctx) {
		fmt.Fprintf(stdout, "%s %s\n", fd.mark, fd.what)
		if fd.fix != "" {
			fmt.Fprintf(stdout, "    fix: %s\n", fd.fix)
		}
		if fd.mark == markFail {
			failed++
		}
	}
	if failed > 0 {
		return &childExit{code: 1}
	}
	return nil
}

// doctor runs the checks against an environment and a configuration.
type doctor struct {
	env   map[string]string
	cfg   config.Config
	admin string
	// proxyNow is the proxy's clock, read from the check host.
	proxyNow time.Time
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
	out := d.proxyVars()
	out = append(out, d.noProxy()...)
	out = append(out, d.trustGo(ctx), d.trustCurl(ctx), d.trustPython(ctx), d.trustNode(ctx))
	admin := d.adminAPI(ctx)
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

// proxyVars checks that all four proxy variables are set to one URL: curl
// reads only the lowercase http_proxy, other clients read either case.
func (d *doctor) proxyVars() []finding {
	names := []string{"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy"}
	var set, missing []string
	values := map[string]bool{}
	for _, n := range names {
		if v := d.env[n]; v != "" {
			set = append(set, n)
			values[v] = true
		} else {
			missing = append(missing, n)
		}
	}
	switch {
	case len(set) == 0:
		return []finding{fail(execFix+", or export HTTP_PROXY, http_proxy, HTTPS_PROXY and https_proxy=http://127.0.0.1:8480", "proxy variables: none is set")}
	case len(values) > 1:
		var pairs []string
		for _, n := range set {
			pairs = append(pairs, n+"="+d.env[n])
		}
		return []finding{fail("set all four to the same toolguard URL", "proxy variables disagree: %s", strings.Join(pairs, " "))}
	case len(missing) > 0:
		return []finding{fail("export "+strings.Join(missing, " ")+" as well (curl reads only the lowercase http_proxy; other clients read either case)",
			"proxy variables: %s set, %s missing", strings.Join(set, ", "), strings.Join(missing, ", "))}
	}
	v := d.env["HTTPS_PROXY"]
	u, err := url.Parse(v)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return []finding{fail("use the proxy listener's URL, such as http://127.0.0.1:8480", "proxy variables: %q is not an http:// proxy URL", v)}
	}
	return []finding{ok("proxy variables: HTTP_PROXY, http_proxy, HTTPS_PROXY and https_proxy are %s", v)}
}

// noProxy checks NO_PROXY for forms clients ignore and for the admin
// listener, which toolguard refuses to proxy to.
func (d *doctor) noProxy() []finding {
	upper, lower := d.env["NO_PROXY"], d.env["no_proxy"]
	if upper != lower && upper != "" && lower != "" {
		return []finding{fail("set NO_PROXY and no_proxy to the same list", "NO_PROXY=%q and no_proxy=%q disagree", upper, lower)}
	}
	list := upper
	if list == "" {
		list = lower
	}
	var out []finding
	var entries []string
	for _, e := range strings.Split(list, ",") {
		if e = strings.TrimSpace(e); e != "" {
			entries = append(entries, e)
		}
	}
	for _, e := range entries {
		switch {
		case e == "*":
			out = append(out, fail("remove * from NO_PROXY: it sends every call around toolguard", "NO_PROXY: * bypasses the proxy for every host"))
		case hostOnly(e) != e:
			out = append(out, fail(fmt.Sprintf("write the host alone: %s (curl ignores entries with a port)", hostOnly(e)), "NO_PROXY: entry %q has a port", e))
		}
	}
	if u, err := url.Parse(d.admin); err == nil {
		found := false
		for _, e := range entries {
			found = found || hostOnly(e) == u.Hostname()
		}
		if !found {
			out = append(out, fail(fmt.Sprintf("add %s to NO_PROXY and no_proxy (toolguard refuses to proxy calls to its own admin listener)", u.Hostname()),
				"NO_PROXY: the admin listener's host %s is not listed", u.Hostname()))
		}
	}
	if len(out) == 0 {
		out = append(out, ok("NO_PROXY: %s (host-only entries, admin listener included)", strings.Join(entries, ",")))
	}
	return out
}

// checkURL is the built-in check host that toolguard answers itself.
var checkURL = "https://" + proxy.CheckHost + "/"

// trustGo calls the check host as a Go program would: proxy and roots
// from the environment (SSL_CERT_FILE included).
func (d *doctor) trustGo(ctx context.Context) finding {
	t := &http.Transport{Proxy: http.ProxyFromEnvironment, TLSClientConfig: &tls.Config{}}
	c := &http.Client{Timeout: 10 * time.Second, Transport: t}
	req, _ := http.NewRequestWithContext(ctx, "GET", checkURL, nil)
	resp, err := c.Do(req)
	if err != nil {
		fix := trustFix("SSL_CERT_FILE")
		if !looksLikeTrust(err.Error()) {
			fix = proxyFix
		}
		return fail(fix, "Go: HTTPS through the proxy failed: %v", shortErr(err))
	}
	defer resp.Body.Close()
	if resp.Header.Get(proxy.HeaderCheck) != "ok" {
		return fail(execFix, "Go: %s answered without toolguard's check header: the call did not go through toolguard", proxy.CheckHost)
	}
	var body struct{ Time time.Time }
	if json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&body) == nil {
		d.proxyNow = body.Time
	}
	return ok("Go: trusts toolguard's CA (HTTPS to %s through the proxy)", proxy.CheckHost)
}

func trustFix(variable string) string {
	return execFix + ", or point " + variable + " at a bundle of the system roots plus toolguard's ca.pem"
}

// trustCurl runs curl against the check host. curl reads CURL_CA_BUNDLE
// before SSL_CERT_FILE.
func (d *doctor) trustCurl(ctx context.Context) finding {
	out, err := runTool(ctx, "curl", "-sS", "--max-time", "10", "-o", "/dev/null", "-D", "-", checkURL)
	return toolFinding("curl", out, err, strings.Contains(strings.ToLower(out), "toolguard-check: ok"), trustFix("CURL_CA_BUNDLE (curl prefers it to SSL_CERT_FILE)"))
}

const pythonCheck = `
import sys, urllib.request
try:
    with urllib.request.urlopen(sys.argv[1], timeout=10) as r:
        print("check:", r.headers.get("Toolguard-Check") or "missing")
except Exception as e:
    print(e)
    sys.exit(1)
`

// trustPython runs Python's urllib (the default SSL context reads
// SSL_CERT_FILE; requests reads REQUESTS_CA_BUNDLE).
func (d *doctor) trustPython(ctx context.Context) finding {
	out, err := runTool(ctx, "python3", "-c", pythonCheck, checkURL)
	return toolFinding("Python", out, err, strings.Contains(out, "check: ok"), trustFix("SSL_CERT_FILE and REQUESTS_CA_BUNDLE"))
}

// nodeCheck tunnels through HTTPS_PROXY by hand, so that it tests Node's
// trust (its roots plus NODE_EXTRA_CA_CERTS) on every Node version.
const nodeCheck = `
const http = require('http'), tls = require('tls');
const p = process.env.HTTPS_PROXY || process.env.https_proxy;
if (!p) { console.log('HTTPS_PROXY is not set'); process.exit(1); }
const u = new URL(p), host = process.argv[1];
const req = http.request({host: u.hostname, port: u.port || 80, method: 'CONNECT', path: host + ':443'});
req.on('connect', (res, sock) => {
  if (res.statusCode !== 200) { console.log('CONNECT answered ' + res.statusCode); process.exit(1); }
  const s = tls.connect({socket: sock, servername: host}, () => s.write('GET / HTTP/1.1\r\nHost: ' + host + '\r\nConnection: close\r\n\r\n'));
  let d = ''; s.on('data', (c) => d += c);
  s.on('end', () => { const m = /toolguard-check: *ok/i.test(d); console.log(m ? 'check: ok' : 'no check header'); process.exit(m ? 0 : 1); });
  s.on('error', (e) => { console.log(e.message); process.exit(1); });
});
req.on('error', (e) => { console.log(e.message); process.exit(1); });
req.end();
`

func (d *doctor) trustNode(ctx context.Context) finding {
	out, err := runTool(ctx, "node", "-e", nodeCheck, proxy.CheckHost)
	f := toolFinding("Node", out, err, strings.Contains(out, "check: ok"), trustFix("NODE_EXTRA_CA_CERTS"))
	if f.mark == markOK && d.env["NODE_USE_ENV_PROXY"] != "1" {
		f.what += "; NODE_USE_ENV_PROXY is not 1, so fetch ignores the proxy variables (Node 24+ honours them with it; older Node needs undici's EnvHttpProxyAgent)"
	}
	return f
}

var errNotInstalled = errors.New("not installed")

// runTool runs a client from PATH with this process's environment.
func runTool(ctx context.Context, name string, args ...string) (string, error) {
	if _, err := exec.LookPath(name); err != nil {
		return "", errNotInstalled
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func toolFinding(name, out string, err error, passed bool, fix string) finding {
	switch {
	case errors.Is(err, errNotInstalled):
		return finding{mark: markSkip, what: name + ": not installed, not checked"}
	case err == nil && passed:
		return ok("%s: trusts toolguard's CA (HTTPS to %s through the proxy)", name, proxy.CheckHost)
	case err == nil:
		return fail(execFix, "%s: %s answered without toolguard's check header: the call did not go through toolguard", name, proxy.CheckHost)
	}
	if !looksLikeTrust(out) {
		fix = proxyFix
	}
	return fail(fix, "%s: HTTPS through the proxy failed: %s", name, lastLine(out))
}

const proxyFix = "start `toolguard serve` at the URL of HTTPS_PROXY, or " + execFix

// looksLikeTrust reports whether a client's error is about the
// certificate rather than about reaching the proxy.
func looksLikeTrust(msg string) bool {
	msg = strings.ToLower(msg)
	for _, s := range []string{"certificate", "x509", "ssl", "issuer", "self-signed", "self signed"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// shortErr drops the request line Go puts in front of a client error.
func shortErr(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

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
		return fail("start `toolguard serve`, or set TOOLGUARD_ADMIN_URL to its admin listener", "admin API: %s is not reachable: %s", d.admin, shortErr(err))
	}
	resp.Body.Close()
	if d.proxyNow.IsZero() {
		d.proxyNow, _ = http.ParseTime(resp.Header.Get("Date"))
	}
	if resp.StatusCode != http.StatusOK {
		return fail("see toolguard's log: it is starting, draining or cannot use its journal", "admin API: %s/readyz answered %s", d.admin, resp.Status)
	}
	return ok("admin API: %s is ready", d.admin)
}

// proxyClock reads the proxy's clock from the check host over plain
// HTTP, which needs no trust: the fallback when the HTTPS checks failed.
func (d *doctor) proxyClock() time.Time {
	var proxyURL string
	for _, n := range []string{"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy"} {
		if proxyURL = d.env[n]; proxyURL != "" {
			break
		}
	}
	u, err := url.Parse(proxyURL)
	if proxyURL == "" || err != nil {
		return time.Time{}
	}
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(u)}}
	resp, err := c.Get("http://" + proxy.CheckHost + "/")
	if err != nil {
		return time.Time{}
	}
	defer resp.Body.Close()
	var body struct{ Time time.Time }
	if resp.Header.Get(proxy.HeaderCheck) != "ok" || json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&body) != nil {
		return time.Time{}
	}
	return body.Time
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
		d.proxyNow = d.proxyClock()
	}
	if d.proxyNow.IsZero() {
		return finding{mark: markSkip, what: "clock: the proxy could not be reached to compare clocks"}
	}
	return clockFinding(now, d.proxyNow)
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
