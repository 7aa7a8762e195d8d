package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolguard/toolguard/config"
	"github.com/toolguard/toolguard/proxy"
)

func TestDoctorProxyVars(t *testing.T) {
	const u = "http://127.0.0.1:8480"
	tests := []struct {
		name     string
		env      map[string]string
		wantMark string
		want     string
	}{
		{name: "all four", env: map[string]string{"HTTP_PROXY": u, "http_proxy": u, "HTTPS_PROXY": u, "https_proxy": u}, wantMark: markOK},
		{name: "none", env: map[string]string{}, wantMark: markFail, want: "none is set"},
		{name: "uppercase only", env: map[string]string{"HTTP_PROXY": u, "HTTPS_PROXY": u}, wantMark: markFail, want: "http_proxy, https_proxy missing"},
		{name: "disagree", env: map[string]string{"HTTP_PROXY": u, "http_proxy": u, "HTTPS_PROXY": "http://other:1", "https_proxy": u}, wantMark: markFail, want: "disagree"},
		{name: "not a URL", env: map[string]string{"HTTP_PROXY": "proxy:1", "http_proxy": "proxy:1", "HTTPS_PROXY": "proxy:1", "https_proxy": "proxy:1"}, wantMark: markFail, want: "not an http:// proxy URL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := (&doctor{env: tc.env}).proxyVars()[0]
			if got.mark != tc.wantMark || !strings.Contains(got.what, tc.want) {
				t.Errorf("got %s %s, want %s …%s…", got.mark, got.what, tc.wantMark, tc.want)
			}
			if got.mark == markFail && got.fix == "" {
				t.Errorf("a failure without a fix")
			}
		})
	}
}

func TestDoctorNoProxy(t *testing.T) {
	guarded := t.TempDir() // the rules guard an API on 10.0.0.7
	rule := "api: billing\nhosts: [\"10.0.0.7:9000\"]\ncredential: {header: Authorization}\nroutes:\n  - name: create\n    match: POST /v1/x\n    effect: irreversible\n"
	if err := os.WriteFile(filepath.Join(guarded, "billing.yaml"), []byte(rule), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		env   map[string]string
		admin string
		want  []string // marks and fragments, one per finding
		fix   string   // the last finding's fix holds it
	}{
		{name: "admin host listed", env: map[string]string{"NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}, admin: "http://127.0.0.1:8481",
			want: []string{markOK + " NO_PROXY: 127.0.0.1"}},
		{name: "port", env: map[string]string{"NO_PROXY": "127.0.0.1:8481"}, admin: "http://127.0.0.1:8481",
			want: []string{markFail + ` NO_PROXY: entry "127.0.0.1:8481" has a port`}, fix: "list localhost instead and call that service as localhost:8481"},
		{name: "admin host missing", env: map[string]string{"NO_PROXY": "corp.example"}, admin: "http://127.0.0.1:8481",
			want: []string{markFail + " NO_PROXY: the admin listener's host 127.0.0.1 is not listed"}, fix: "add localhost to NO_PROXY and no_proxy and reach the admin API as http://localhost:8481"},
		{name: "ipv6 with port", env: map[string]string{"NO_PROXY": "[::1]:8481,::1"}, admin: "http://[::1]:8481",
			want: []string{markFail + ` NO_PROXY: entry "[::1]:8481" has a port`}, fix: "list localhost instead"},
		{name: "star", env: map[string]string{"NO_PROXY": "*,localhost"}, admin: "http://localhost:8481",
			want: []string{markFail + " NO_PROXY: * bypasses the proxy"}},
		{name: "cases disagree", env: map[string]string{"NO_PROXY": "a", "no_proxy": "b"}, admin: "http://a:1",
			want: []string{markFail + ` NO_PROXY="a" and no_proxy="b" disagree`}},
		// Regression: the README's shell (NO_PROXY=localhost, admin API
		// reached as localhost:8481) failed with "add 127.0.0.1".
		{name: "localhost covers a loopback admin listener", env: map[string]string{"NO_PROXY": "localhost", "no_proxy": "localhost"}, admin: "http://127.0.0.1:8481",
			want: []string{markOK + " NO_PROXY: localhost (host-only entries; localhost covers the admin listener: reach it as http://localhost:8481)"}},
		{name: "localhost does not cover 127.0.0.2", env: map[string]string{"NO_PROXY": "localhost"}, admin: "http://127.0.0.2:8481",
			want: []string{markFail + " NO_PROXY: the admin listener's host 127.0.0.2 is not listed"}, fix: "add 127.0.0.2 to NO_PROXY"},
		{name: "admin on a guarded IP", env: map[string]string{"NO_PROXY": "localhost"}, admin: "http://10.0.0.7:8481",
			want: []string{markFail + " NO_PROXY: the admin listener's host 10.0.0.7 is not listed"}, fix: "reach the admin API by a host name of its own"},
		{name: "port on a guarded IP", env: map[string]string{"NO_PROXY": "10.0.0.7:8481"}, admin: "http://10.0.0.7:8481",
			want: []string{markFail + ` NO_PROXY: entry "10.0.0.7:8481" has a port`}, fix: "remove the entry, or reach that service by a host name"},
		{name: "admin on another IP", env: map[string]string{"NO_PROXY": "localhost"}, admin: "http://10.0.0.8:8481",
			want: []string{markFail + " NO_PROXY: the admin listener's host 10.0.0.8 is not listed"}, fix: "add 10.0.0.8 to NO_PROXY"},
		// exec gives the command no admin URL without an agent token.
		{name: "under exec without an admin URL", env: map[string]string{"NO_PROXY": "", "NODE_OPTIONS": `--require="/tmp/toolguard-exec-1/` + nodePreloadName + `"`},
			admin: "http://127.0.0.1:8481", want: []string{markOK + ` NO_PROXY: ""; toolguard exec gives this command no admin URL`}},
		{name: "under exec with an admin URL", env: map[string]string{"NO_PROXY": "corp.example", "TOOLGUARD_ADMIN_URL": "http://localhost:8481",
			"NODE_OPTIONS": `--require="/tmp/toolguard-exec-1/` + nodePreloadName + `"`},
			admin: "http://localhost:8481", want: []string{markFail + " NO_PROXY: the admin listener's host localhost is not listed"}, fix: "add localhost"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := &doctor{env: tc.env, admin: tc.admin}
			d.cfg.Rules.Dir = guarded
			got := d.noProxy()
			if len(got) != len(tc.want) {
				t.Fatalf("got %d findings %v, want %d", len(got), got, len(tc.want))
			}
			for i, w := range tc.want {
				if line := got[i].mark + " " + got[i].what; !strings.HasPrefix(line, w) {
					t.Errorf("finding %d = %q, want %q…", i, line, w)
				}
			}
			if fix := got[len(got)-1].fix; !strings.Contains(fix, tc.fix) {
				t.Errorf("fix %q lacks %q", fix, tc.fix)
			}
			for _, f := range got {
				for _, bad := range []string{"add 127.0.0.1", "add ::1", "alone: 127.0.0.1", "alone: ::1", "add 10.0.0.7", "alone: 10.0.0.7"} {
					if strings.Contains(f.fix, bad) {
						t.Errorf("the fix %q advises an IP that would also exempt guarded calls", f.fix)
					}
				}
			}
		})
	}
}

func TestDoctorClock(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		proxyNow time.Time
		wantMark string
	}{
		{name: "same", proxyNow: now.Add(-300 * time.Millisecond), wantMark: markOK},
		{name: "proxy ahead", proxyNow: now.Add(10 * time.Second), wantMark: markFail},
		{name: "proxy behind", proxyNow: now.Add(-2 * time.Minute), wantMark: markFail},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := clockFinding(now, tc.proxyNow); got.mark != tc.wantMark {
				t.Errorf("got %s %s, want %s", got.mark, got.what, tc.wantMark)
			}
		})
	}
}

// TestAgentEnv: the command's environment points every client at the
// proxy and never holds an operator token. Regression: exec passed
// TOOLGUARD_ADMIN_URL (and the caller's TOOLGUARD_ADMIN_TOKEN) to the agent,
// which approved its own held call through it.
func TestAgentEnv(t *testing.T) {
	base := []string{"PATH=/bin", "https_proxy=http://old:1", "ALL_PROXY=socks5://x", "no_proxy=corp.example:443,10.0.0.0/8", "CURL_CA_BUNDLE=/old",
		"TOOLGUARD_ADMIN_TOKEN=op-secret", "TOOLGUARD_ADMIN_TOKEN_FILE=/run/op", "toolguard_admin_agent_token=x", "TOOLGUARD_ADMIN_INSECURE_NO_AUTH=true",
		"TOOLGUARD_AGENT_TOKEN=stale", "TOOLGUARD_ADMIN_URL=http://old:8481",
		"NODE_OPTIONS=--max-old-space-size=512", "TOOLGUARD_RULES_DIR=/old/rules", "TOOLGUARD_JOURNAL_PATH=/old/toolguard.db", "TOOLGUARD_CONFIG=/old/toolguard.yaml"}
	common := map[string]string{
		"PATH": "/bin", "HTTP_PROXY": "http://127.0.0.1:8480", "http_proxy": "http://127.0.0.1:8480",
		"HTTPS_PROXY": "http://127.0.0.1:8480", "https_proxy": "http://127.0.0.1:8480",
		"SSL_CERT_FILE": "/tmp/b.pem", "REQUESTS_CA_BUNDLE": "/tmp/b.pem", "CURL_CA_BUNDLE": "/tmp/b.pem", "NODE_EXTRA_CA_CERTS": "/tmp/b.pem",
		"NODE_USE_ENV_PROXY": "1",
		// The caller's options, then exec's preload for Node's fetch.
		"NODE_OPTIONS":        `--max-old-space-size=512 --require="/tmp/x y/toolguard-fetch-proxy.cjs"`,
		"TOOLGUARD_RULES_DIR": "/srv/rules",
	}
	tests := []struct {
		name  string
		admin agentAdmin
		where toolguardFiles    // besides the rules directory
		want  map[string]string // besides common
	}{
		{name: "no agent token: no admin URL; PostgreSQL journal", want: map[string]string{
			"NO_PROXY": "corp.example,10.0.0.0/8", "no_proxy": "corp.example,10.0.0.0/8"}},
		{name: "agent token; bbolt journal and config file", admin: agentAdmin{url: "http://127.0.0.1:8481", token: "agent-secret"},
			where: toolguardFiles{journal: "/srv/toolguard.db", config: "/srv/toolguard.yaml"}, want: map[string]string{
				"NO_PROXY": "corp.example,10.0.0.0/8,127.0.0.1", "no_proxy": "corp.example,10.0.0.0/8,127.0.0.1",
				"TOOLGUARD_ADMIN_URL": "http://127.0.0.1:8481", "TOOLGUARD_AGENT_TOKEN": "agent-secret",
				"TOOLGUARD_JOURNAL_PATH": "/srv/toolguard.db", "TOOLGUARD_CONFIG": "/srv/toolguard.yaml"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]string{}
			where := tc.where
			where.rulesDir = "/srv/rules"
			setup := agentSetup{proxyURL: "http://127.0.0.1:8480", admin: tc.admin, bundle: "/tmp/b.pem",
				nodePreload: "/tmp/x y/toolguard-fetch-proxy.cjs", where: where}
			for _, kv := range agentEnv(base, setup) {
				k, v, _ := strings.Cut(kv, "=")
				if _, dup := got[k]; dup {
					t.Errorf("%s set twice", k)
				}
				got[k] = v
			}
			want := maps.Clone(common)
			maps.Copy(want, tc.want)
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
			if len(got) != len(want) {
				t.Errorf("got %d variables, want %d (ALL_PROXY, every TOOLGUARD_ADMIN_* and the caller's TOOLGUARD_JOURNAL_PATH and TOOLGUARD_CONFIG dropped): %v", len(got), len(want), got)
			}
		})
	}
}

func TestNodeOptions(t *testing.T) {
	tests := []struct{ existing, preload, want string }{
		{preload: "/tmp/a/p.cjs", want: `--require="/tmp/a/p.cjs"`},
		{existing: " --max-old-space-size=512 ", preload: "/tmp/a/p.cjs", want: `--max-old-space-size=512 --require="/tmp/a/p.cjs"`},
		{preload: `/tmp/a "b"\c/p.cjs`, want: `--require="/tmp/a \"b\"\\c/p.cjs"`},
	}
	for _, tc := range tests {
		if got := nodeOptions(tc.existing, tc.preload); got != tc.want {
			t.Errorf("nodeOptions(%q, %q) = %s, want %s", tc.existing, tc.preload, got, tc.want)
		}
	}
}

func TestSummaryLine(t *testing.T) {
	metrics := func(forwarded, replayed, held string) callCounts {
		c, err := parseCounts(strings.NewReader(`# HELP toolguard_requests_total x
toolguard_requests_total{api="",route="",outcome="passthrough"} 9
toolguard_requests_total{api="billing",route="create",outcome="forwarded"} ` + forwarded + `
toolguard_requests_total{api="billing",route="create",outcome="replayed"} ` + replayed + `
toolguard_held_steps{hold="awaiting_approval"} ` + held + `
toolguard_held_steps{hold="needs_review"} 1
`))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	got := summaryLine(metrics("1", "0", "0"), metrics("3", "4", "2"), nil, "toolguard review ls --admin http://x")
	want := "toolguard: 6 guarded (2 forwarded, 4 replayed, 0 recovered, 0 blocked), 3 held; see holds with: toolguard review ls --admin http://x"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestAgentAdminURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{in: "http://127.0.0.1:8481", want: "http://localhost:8481"},
		{in: "http://0.0.0.0:8481", want: "http://localhost:8481"},
		{in: "http://[::1]:8481", want: "http://localhost:8481"},
		{in: "http://127.0.0.3:8481", want: "http://127.0.0.3:8481"},
		{in: "http://toolguard.internal:8481", want: "http://toolguard.internal:8481"},
	}
	for _, tc := range tests {
		if got := agentAdminURL(tc.in); got != tc.want {
			t.Errorf("agentAdminURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestDoctorRules: a rules directory with no route guards nothing, so
// doctor fails it, as serve warns and rules check fails (it said ✔).
func TestDoctorRules(t *testing.T) {
	empty, one := t.TempDir(), t.TempDir()
	rule := "api: billing\nhosts: [api.example.com]\ncredential: {header: Authorization}\nroutes:\n  - name: create\n    match: POST /v1/x\n    effect: irreversible\n"
	if err := os.WriteFile(filepath.Join(one, "billing.yaml"), []byte(rule), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dir, mark string
	}{{empty, markFail}, {one, markOK}} {
		d := &doctor{}
		d.cfg.Rules.Dir = tc.dir
		if got := d.rules(); got.mark != tc.mark {
			t.Errorf("rules in %s: %s %s, want %s", tc.dir, got.mark, got.what, tc.mark)
		}
	}
}

// TestDoctorNodeFetch reads what the fetch check printed. Regression:
// doctor's only Node check tunnelled by hand, so it passed while Node 20's
// fetch went around the proxy.
func TestDoctorNodeFetch(t *testing.T) {
	failed := errors.New("exit status 1")
	underExec := map[string]string{"NODE_OPTIONS": `--require="/tmp/toolguard-exec-1/` + nodePreloadName + `"`}
	tests := []struct {
		name     string
		env      map[string]string
		out      string
		err      error
		wantMark string
		want     string // the finding starts with it
		wantFix  string // the fix holds it
	}{
		{name: "through toolguard", out: "check: ok", wantMark: markOK, want: "Node fetch: goes through toolguard"},
		{name: "bypass by hand", out: "ENOTFOUND: getaddrinfo ENOTFOUND toolguard.invalid", err: failed,
			wantMark: markFail, want: "Node fetch: went around the proxy", wantFix: "toolguard exec -- COMMAND`: it sets NODE_USE_ENV_PROXY=1"},
		{name: "bypass under exec without undici", env: underExec, err: failed,
			out:      "toolguard: Node v20.20.2's fetch ignores HTTPS_PROXY and no undici package was found from /x: fetch calls will bypass toolguard; fix: npm install undici\nEAI_AGAIN: getaddrinfo EAI_AGAIN toolguard.invalid",
			wantMark: markFail, want: "Node fetch: went around the proxy", wantFix: "`npm install undici`): exec's preload"},
		{name: "another proxy answered", out: "no check header", err: failed, wantMark: markFail, want: "Node fetch: toolguard.invalid answered without toolguard's check header"},
		{name: "CA not trusted", out: "SELF_SIGNED_CERT_IN_CHAIN: self-signed certificate in certificate chain", err: failed,
			wantMark: markFail, want: "Node fetch: HTTPS through the proxy failed: SELF_SIGNED", wantFix: "NODE_EXTRA_CA_CERTS"},
		{name: "proxy down", out: "ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:8480", err: failed,
			wantMark: markFail, want: "Node fetch: HTTPS through the proxy failed: ECONNREFUSED", wantFix: "toolguard exec -- COMMAND"},
		{name: "no fetch", out: "no fetch in Node v16.20.2", wantMark: markSkip, want: "Node fetch: no fetch in Node v16.20.2, not checked"},
		{name: "no node", err: errNotInstalled, wantMark: markSkip, want: "Node fetch: not installed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := (&doctor{env: tc.env}).fetchFinding(tc.out, tc.err)
			if got.mark != tc.wantMark || !strings.HasPrefix(got.what, tc.want) || !strings.Contains(got.fix, tc.wantFix) {
				t.Errorf("got %s %s\n    fix: %s\nwant %s %s… with a fix holding %q", got.mark, got.what, got.fix, tc.wantMark, tc.want, tc.wantFix)
			}
		})
	}
}

// checkHostProxy is a forward proxy that answers toolguard's check host
// as toolguard does, and nothing else.
func checkHostProxy(t *testing.T) string {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host != proxy.CheckHost {
			http.Error(w, "unknown host", http.StatusBadGateway)
			return
		}
		w.Header().Set(proxy.HeaderCheck, "ok")
		fmt.Fprintf(w, `{"toolguard":"ok","time":%q}`, time.Now().UTC().Format(time.RFC3339Nano))
	}))
	t.Cleanup(s.Close)
	return s.URL
}

// closedURL is an http URL where nothing listens.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	return "http://" + l.Addr().String()
}

// TestDoctorFixWhileServeRuns: the fixes follow from what answers at the
// proxy variables' URL and at the admin URL. Regression: doctor advised
// starting toolguard serve while it ran, because the admin URL was wrong.
func TestDoctorFixWhileServeRuns(t *testing.T) {
	const start = "start `toolguard serve`"
	proxyURL, closed := checkHostProxy(t), closedURL(t)
	admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(admin.Close)
	tests := []struct {
		name            string
		proxy, admin    string
		wantStart       bool   // a fix advises starting serve
		wantAdminFix    string // the admin API finding's fix holds it; "" when it passes
		wantReachFixHas string
	}{
		{name: "serve runs, admin URL wrong", proxy: proxyURL, admin: closed,
			wantAdminFix: "toolguard answers at " + proxyURL + ": set TOOLGUARD_ADMIN_URL", wantReachFixHas: "toolguard answers at " + proxyURL},
		{name: "serve runs, proxy variables wrong", proxy: closed, admin: admin.URL,
			wantReachFixHas: "toolguard's admin API answers at " + admin.URL + ", but nothing at " + closed},
		{name: "no proxy variables", admin: admin.URL, wantReachFixHas: "export HTTP_PROXY, http_proxy, HTTPS_PROXY and https_proxy set to"},
		{name: "nothing runs", proxy: closed, admin: closed, wantStart: true,
			wantAdminFix: start, wantReachFixHas: start},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{}
			if tc.proxy != "" {
				env = map[string]string{"HTTP_PROXY": tc.proxy, "http_proxy": tc.proxy, "HTTPS_PROXY": tc.proxy, "https_proxy": tc.proxy}
			}
			d := &doctor{env: env, admin: tc.admin}
			d.probeProxy(context.Background())
			adminFinding, reach := d.adminAPI(context.Background()), d.reachFix()
			if got := strings.Contains(adminFinding.fix+reach, start); got != tc.wantStart {
				t.Errorf("advises starting serve: %v, want %v\nadmin fix: %s\nreach fix: %s", got, tc.wantStart, adminFinding.fix, reach)
			}
			if !strings.Contains(adminFinding.fix, tc.wantAdminFix) || (tc.wantAdminFix == "") != (adminFinding.mark == markOK) {
				t.Errorf("admin API: %s %s\n    fix: %s\nwant a fix holding %q", adminFinding.mark, adminFinding.what, adminFinding.fix, tc.wantAdminFix)
			}
			if !strings.Contains(reach, tc.wantReachFixHas) {
				t.Errorf("reach fix %q lacks %q", reach, tc.wantReachFixHas)
			}
		})
	}
}

// readmeShell returns the variables that docs/agents.md's "Pointing agents
// at it" (the README's shell set-up by hand) exports, with $PWD as
// /home/me/toolguard.
func readmeShell(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile("../../docs/agents.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n## Pointing agents at it\n")
	if !ok {
		t.Fatal("docs/agents.md has no ## Pointing agents at it section")
	}
	_, block, _ := strings.Cut(section, "```sh\n")
	block, _, _ = strings.Cut(block, "```")
	env := map[string]string{}
	for line := range strings.SplitSeq(block, "\n") {
		line, _, _ = strings.Cut(line, " #")
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "export ")
		if !ok {
			continue
		}
		for _, kv := range strings.Fields(rest) {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = strings.ReplaceAll(v, "$PWD", "/home/me/toolguard")
		}
	}
	if env["NO_PROXY"] == "" {
		t.Fatalf("no NO_PROXY export in the README's block:\n%s", block)
	}
	return env
}

// TestDoctorREADMEShell: the shell the README sets up by hand passes the
// proxy variable and NO_PROXY checks against serve's default admin
// listener. Regression: doctor asked for 127.0.0.1 in NO_PROXY, which
// would also send the demo API on 127.0.0.1 around toolguard.
func TestDoctorREADMEShell(t *testing.T) {
	d := &doctor{env: readmeShell(t), admin: "http://" + dialable(config.Default().Admin.Listen)}
	d.cfg.Rules.Dir = "../../examples/rules"
	var out strings.Builder
	findings := append(d.proxyVars(), d.noProxy()...)
	if n := printFindings(&out, findings); n != 0 {
		t.Errorf("%d checks failed:\n%s", n, out.String())
	}
	golden(t, "doctor_readme_shell", out.String())
}
