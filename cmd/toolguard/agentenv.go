package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
)

// ownedVars are the variables exec owns in the command's environment;
// values the caller had are replaced (NO_PROXY entries are kept, and
// NODE_OPTIONS, which exec only adds to, is not among them).
var ownedVars = []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE",
	"CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "NODE_USE_ENV_PROXY", "TOOLGUARD_ADMIN_URL", "TOOLGUARD_AGENT_TOKEN",
	"TOOLGUARD_RULES_DIR", "TOOLGUARD_JOURNAL_PATH", "TOOLGUARD_CONFIG"}

// adminVarPrefix starts every admin setting (TOOLGUARD_ADMIN_TOKEN,
// _TOKEN_FILE, _AGENT_TOKEN, _INSECURE_NO_AUTH...): exec never passes them
// to the command, so that an operator token in the caller's environment
// does not reach the agent.
const adminVarPrefix = "TOOLGUARD_ADMIN_"

// agentAdmin is what the command is told of the admin API: its URL and the
// agent token, both empty when no agent token is configured (the command
// then gets no admin URL at all).
type agentAdmin struct{ url, token string }

// agentSetup is what exec tells the command about the toolguard it runs
// behind. None of it is a secret but the agent token, which may read and
// checkpoint but never approve.
type agentSetup struct {
	proxyURL string
	admin    agentAdmin
	bundle   string // the CA bundle: system roots plus toolguard's CA
	// nodePreload is the file NODE_OPTIONS preloads to route Node's fetch
	// through the proxy; "" adds nothing to NODE_OPTIONS.
	nodePreload string
	// where says where toolguard's rules, journal and config file are, for
	// the toolguard commands the command runs (doctor).
	where toolguardFiles
}

// toolguardFiles are the absolute paths of toolguard's rules directory,
// bbolt journal and config file; "" leaves one out (no config file, a
// PostgreSQL journal, whose DSN may hold a password).
type toolguardFiles struct{ rulesDir, journal, config string }

// systemBundles are where distributions keep their root certificates, in
// the order Go's crypto/x509 looks for them.
var systemBundles = []string{
	"/etc/ssl/certs/ca-certificates.crt",
	"/etc/pki/tls/certs/ca-bundle.crt",
	"/etc/ssl/ca-bundle.pem",
	"/etc/pki/tls/cacert.pem",
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
	"/etc/ssl/cert.pem",
}

// agentEnv is base with every proxy and CA variable that common clients
// read pointing at toolguard. curl reads only the lowercase http_proxy and
// prefers CURL_CA_BUNDLE over SSL_CERT_FILE; Python's requests reads
// REQUESTS_CA_BUNDLE; Node adds NODE_EXTRA_CA_CERTS to its own roots and
// honours the proxy variables with NODE_USE_ENV_PROXY=1 (Node 24+), and
// older Node's fetch through the preload in NODE_OPTIONS.
//
// The command never gets an operator token: TOOLGUARD_ADMIN_URL comes only
// with TOOLGUARD_AGENT_TOKEN, which may read and checkpoint but never approve
// or resolve, and every TOOLGUARD_ADMIN_* variable of base is dropped.
func agentEnv(base []string, s agentSetup) []string {
	var keep []string
	var noProxy []string
	var nodeOpts string
	for _, kv := range base {
		k, v, _ := strings.Cut(kv, "=")
		if strings.EqualFold(k, "NO_PROXY") {
			noProxy = append(noProxy, strings.Split(v, ",")...)
		}
		if k == "NODE_OPTIONS" && s.nodePreload != "" {
			nodeOpts = v
			continue
		}
		if isOwnedVar(k) || strings.HasPrefix(strings.ToUpper(k), adminVarPrefix) {
			continue
		}
		keep = append(keep, kv)
	}
	no := strings.Join(noProxyEntries(noProxy, s.admin.url), ",")
	env := append(keep,
		"HTTP_PROXY="+s.proxyURL, "http_proxy="+s.proxyURL,
		"HTTPS_PROXY="+s.proxyURL, "https_proxy="+s.proxyURL,
		"NO_PROXY="+no, "no_proxy="+no,
		"SSL_CERT_FILE="+s.bundle, "REQUESTS_CA_BUNDLE="+s.bundle, "CURL_CA_BUNDLE="+s.bundle, "NODE_EXTRA_CA_CERTS="+s.bundle,
		"NODE_USE_ENV_PROXY=1",
	)
	if s.nodePreload != "" {
		env = append(env, "NODE_OPTIONS="+nodeOptions(nodeOpts, s.nodePreload))
	}
	for _, v := range []struct{ name, value string }{
		{"TOOLGUARD_RULES_DIR", s.where.rulesDir}, {"TOOLGUARD_JOURNAL_PATH", s.where.journal}, {"TOOLGUARD_CONFIG", s.where.config},
	} {
		if v.value != "" {
			env = append(env, v.name+"="+v.value)
		}
	}
	if s.admin.url == "" || s.admin.token == "" {
		return env
	}
	return append(env, "TOOLGUARD_ADMIN_URL="+s.admin.url, "TOOLGUARD_AGENT_TOKEN="+s.admin.token)
}

func isOwnedVar(k string) bool {
	for _, v := range ownedVars {
		if strings.EqualFold(k, v) {
			return true
		}
	}
	return false
}

// noProxyEntries keeps the caller's entries, host-only (curl ignores an
// entry with a port), and adds the admin listener's host, when the command
// is given one, so that the command reaches the admin API directly.
func noProxyEntries(existing []string, adminURL string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(h string) {
		h = strings.TrimSpace(h)
		if h == "" || seen[h] {
			return
		}
		seen[h] = true
		out = append(out, h)
	}
	for _, e := range existing {
		add(hostOnly(e))
	}
	if u, err := url.Parse(adminURL); adminURL != "" && err == nil {
		add(u.Hostname())
	}
	return out
}

// hostOnly strips a port from a NO_PROXY entry: "10.0.0.1:8481" and
// "[::1]:8481" become "10.0.0.1" and "::1"; CIDRs and names stay.
func hostOnly(e string) string {
	e = strings.TrimSpace(e)
	if h, _, err := net.SplitHostPort(e); err == nil {
		return h
	}
	return strings.Trim(e, "[]")
}

// writeBundle writes the system roots (or the caller's SSL_CERT_FILE)
// followed by toolguard's CA to path.
func writeBundle(path, caFile, callerBundle string) (string, error) {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return "", fmt.Errorf("read toolguard's CA: %w", err)
	}
	var buf bytes.Buffer
	for _, p := range append([]string{callerBundle}, systemBundles...) {
		if p == "" {
			continue
		}
		if roots, err := os.ReadFile(p); err == nil {
			buf.Write(roots)
			if len(roots) > 0 && roots[len(roots)-1] != '\n' {
				buf.WriteByte('\n')
			}
			break
		}
	}
	buf.WriteString("# toolguard CA\n")
	buf.Write(ca)
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return "", fmt.Errorf("write CA bundle: %w", err)
	}
	return path, nil
}

// callCounts are the figures of the exec summary, from /metrics.
type callCounts struct {
	outcomes map[string]float64 // toolguard_requests_total by outcome
	held     float64            // toolguard_held_steps, all holds
}

// countsFrom scrapes a metrics handler in this process.
func countsFrom(h http.Handler, _ string) (callCounts, error) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	return parseCounts(rec.Body)
}

// countsFromURL scrapes a running toolguard's /metrics with token (the
// operator's, as the CLI finds it).
func countsFromURL(ctx context.Context, c *http.Client, u, token string) (callCounts, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
	if err != nil {
		return callCounts{}, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return callCounts{}, fmt.Errorf("read metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return callCounts{}, fmt.Errorf("read metrics: %s", resp.Status)
	}
	return parseCounts(resp.Body)
}

// parseCounts reads the two metrics the summary needs from the Prometheus
// text format.
func parseCounts(r io.Reader) (callCounts, error) {
	c := callCounts{outcomes: map[string]float64{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name, rest, ok := strings.Cut(line, "{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		switch name {
		case "toolguard_requests_total":
			c.outcomes[label(labels, "outcome")] += v
		case "toolguard_held_steps":
			c.held += v
		}
	}
	return c, sc.Err()
}

func label(labels, name string) string {
	for _, kv := range strings.Split(labels, ",") {
		k, v, _ := strings.Cut(kv, "=")
		if k == name {
			s, _ := strconv.Unquote(v)
			return s
		}
	}
	return ""
}

// summaryLine is exec's one line on exit: the guarded calls the command
// made, how many were answered from the journal, and the holds.
func summaryLine(before, after callCounts, err error, holds string) string {
	if err != nil {
		return "toolguard: summary unavailable: " + err.Error()
	}
	d := func(o string) int { return int(after.outcomes[o] - before.outcomes[o]) }
	guarded := d("forwarded") + d("replayed") + d("recovered") + d("blocked")
	line := fmt.Sprintf("toolguard: %d guarded (%d forwarded, %d replayed, %d recovered, %d blocked), %d held",
		guarded, d("forwarded"), d("replayed"), d("recovered"), d("blocked"), int(after.held))
	return line + "; see holds with: " + holds
}
