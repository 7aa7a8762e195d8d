package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"time"

	"github.com/toolguard/toolguard/proxy"
)

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
			fix = d.reachFix()
		}
		return fail(fix, "Go: HTTPS through the proxy failed: %v", shortErr(err))
	}
	defer resp.Body.Close()
	if resp.Header.Get(proxy.HeaderCheck) != "ok" {
		return fail(execFix, "Go: %s answered without toolguard's check header: the call did not go through toolguard", proxy.CheckHost)
	}
	var body struct{ Time time.Time }
	if json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&body) == nil {
		d.sawProxyClock(body.Time)
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
	return d.toolFinding("curl", out, err, strings.Contains(strings.ToLower(out), "toolguard-check: ok"), trustFix("CURL_CA_BUNDLE (curl prefers it to SSL_CERT_FILE)"))
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
	return d.toolFinding("Python", out, err, strings.Contains(out, "check: ok"), trustFix("SSL_CERT_FILE and REQUESTS_CA_BUNDLE"))
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
	return d.toolFinding("Node", out, err, strings.Contains(out, "check: ok"), trustFix("NODE_EXTRA_CA_CERTS"))
}

// nodeFetchCheck calls the check host with Node's built-in fetch and
// nothing of its own: whether fetch goes through the proxy depends on the
// Node version, NODE_USE_ENV_PROXY and a preload (exec's) that installs a
// proxy dispatcher.
const nodeFetchCheck = `
if (typeof fetch !== 'function') { console.log('no fetch in Node ' + process.version); process.exit(0); }
fetch(process.argv[1]).then(
  (r) => { const m = r.headers.get('toolguard-check') === 'ok'; console.log(m ? 'check: ok' : 'no check header'); process.exit(m ? 0 : 1); },
  (e) => { const c = e.cause || e; console.log((c.code ? c.code + ': ' : '') + (c.message || String(c))); process.exit(1); });
`

// nodeFetch checks that Node's built-in fetch goes through toolguard:
// before Node 24 it ignores the proxy variables even with
// NODE_USE_ENV_PROXY=1, while Node's https module (trustNode) can reach
// the proxy and trust its CA.
func (d *doctor) nodeFetch(ctx context.Context) finding {
	out, err := runTool(ctx, "node", "-e", nodeFetchCheck, checkURL)
	return d.fetchFinding(out, err)
}

// fetchFinding reads what nodeFetchCheck printed and how it exited.
func (d *doctor) fetchFinding(out string, err error) finding {
	switch {
	case errors.Is(err, errNotInstalled):
		return finding{mark: markSkip, what: "Node fetch: not installed, not checked"}
	case strings.Contains(out, "no fetch in Node"):
		return finding{mark: markSkip, what: "Node fetch: " + lastLine(out) + ", not checked"}
	case err == nil && strings.Contains(out, "check: ok"):
		return ok("Node fetch: goes through toolguard (HTTPS to %s)", proxy.CheckHost)
	case err == nil || strings.Contains(out, "no check header"):
		return fail(d.fetchFix(), "Node fetch: %s answered without toolguard's check header: fetch did not go through toolguard", proxy.CheckHost)
	case bypassed(out):
		return fail(d.fetchFix(), "Node fetch: went around the proxy (it looked up %s itself): fetch calls bypass toolguard", proxy.CheckHost)
	case looksLikeTrust(out):
		return fail(trustFix("NODE_EXTRA_CA_CERTS"), "Node fetch: HTTPS through the proxy failed: %s", lastLine(out))
	}
	return fail(d.reachFix(), "Node fetch: HTTPS through the proxy failed: %s", lastLine(out))
}

// underExec reports whether doctor runs under toolguard exec, whose Node
// preload is in NODE_OPTIONS.
func (d *doctor) underExec() bool {
	return strings.Contains(d.env["NODE_OPTIONS"], nodePreloadName)
}

// bypassed reports whether a client's error says it looked the check host
// up itself: it did not use the proxy (.invalid never resolves).
func bypassed(msg string) bool {
	for _, s := range []string{"ENOTFOUND", "EAI_AGAIN", "getaddrinfo"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// fetchFix is the fix for Node's fetch going around the proxy. Under exec
// (its preload in NODE_OPTIONS) only undici or a newer Node is missing.
func (d *doctor) fetchFix() string {
	if d.underExec() {
		return "install undici where the agent runs (`npm install undici`): exec's preload then routes fetch through the proxy on Node before 24; or use Node 24+, which does with NODE_USE_ENV_PROXY=1"
	}
	return "run the agent with `toolguard exec -- COMMAND`: it sets NODE_USE_ENV_PROXY=1, which Node 24+ honours in fetch, and on older Node preloads undici's EnvHttpProxyAgent (`npm install undici`); " +
		"or call undici's setGlobalDispatcher(new EnvHttpProxyAgent()) at start-up"
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

func (d *doctor) toolFinding(name, out string, err error, passed bool, fix string) finding {
	switch {
	case errors.Is(err, errNotInstalled):
		return finding{mark: markSkip, what: name + ": not installed, not checked"}
	case err == nil && passed:
		return ok("%s: trusts toolguard's CA (HTTPS to %s through the proxy)", name, proxy.CheckHost)
	case err == nil:
		return fail(execFix, "%s: %s answered without toolguard's check header: the call did not go through toolguard", name, proxy.CheckHost)
	}
	if !looksLikeTrust(out) {
		fix = d.reachFix()
	}
	return fail(fix, "%s: HTTPS through the proxy failed: %s", name, lastLine(out))
}

// reachFix is the fix for a client that failed for a reason other than
// trust. It depends on what answers: serve is never advised while it runs.
func (d *doctor) reachFix() string {
	switch {
	case d.probe.proxyURL == "":
		return execFix + ", or export HTTP_PROXY, http_proxy, HTTPS_PROXY and https_proxy set to toolguard's proxy URL"
	case d.probe.answered:
		return "toolguard answers at " + d.probe.proxyURL + ", but this client did not get through it: check its own proxy settings, or " + execFix
	case d.probe.adminUp:
		return "toolguard's admin API answers at " + d.admin + ", but nothing at " + d.probe.proxyURL +
			" answers as toolguard: point the proxy variables at its proxy listener (serve prints it as proxy:), or " + execFix
	}
	return "start `toolguard serve` at the URL of HTTPS_PROXY (nothing at " + d.probe.proxyURL + " answers as toolguard), or " + execFix
}

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
