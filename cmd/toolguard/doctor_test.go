package main

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
	tests := []struct {
		name  string
		env   map[string]string
		admin string
		want  []string // marks and fragments, one per finding
	}{
		{name: "admin host listed", env: map[string]string{"NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}, admin: "http://127.0.0.1:8481",
			want: []string{markOK + " NO_PROXY: 127.0.0.1"}},
		{name: "port", env: map[string]string{"NO_PROXY": "127.0.0.1:8481"}, admin: "http://127.0.0.1:8481",
			want: []string{markFail + ` NO_PROXY: entry "127.0.0.1:8481" has a port`}},
		{name: "admin host missing", env: map[string]string{"NO_PROXY": "corp.example"}, admin: "http://127.0.0.1:8481",
			want: []string{markFail + " NO_PROXY: the admin listener's host 127.0.0.1 is not listed"}},
		{name: "ipv6 with port", env: map[string]string{"NO_PROXY": "[::1]:8481,::1"}, admin: "http://[::1]:8481",
			want: []string{markFail + ` NO_PROXY: entry "[::1]:8481" has a port`}},
		{name: "star", env: map[string]string{"NO_PROXY": "*,localhost"}, admin: "http://localhost:8481",
			want: []string{markFail + " NO_PROXY: * bypasses the proxy"}},
		{name: "cases disagree", env: map[string]string{"NO_PROXY": "a", "no_proxy": "b"}, admin: "http://a:1",
			want: []string{markFail + ` NO_PROXY="a" and no_proxy="b" disagree`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := (&doctor{env: tc.env, admin: tc.admin}).noProxy()
			if len(got) != len(tc.want) {
				t.Fatalf("got %d findings %v, want %d", len(got), got, len(tc.want))
			}
			for i, w := range tc.want {
				if line := got[i].mark + " " + got[i].what; !strings.HasPrefix(line, w) {
					t.Errorf("finding %d = %q, want %q…", i, line, w)
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
		"TOOLGUARD_AGENT_TOKEN=stale", "TOOLGUARD_ADMIN_URL=http://old:8481"}
	common := map[string]string{
		"PATH": "/bin", "HTTP_PROXY": "http://127.0.0.1:8480", "http_proxy": "http://127.0.0.1:8480",
		"HTTPS_PROXY": "http://127.0.0.1:8480", "https_proxy": "http://127.0.0.1:8480",
		"SSL_CERT_FILE": "/tmp/b.pem", "REQUESTS_CA_BUNDLE": "/tmp/b.pem", "CURL_CA_BUNDLE": "/tmp/b.pem", "NODE_EXTRA_CA_CERTS": "/tmp/b.pem",
		"NODE_USE_ENV_PROXY": "1",
	}
	tests := []struct {
		name  string
		admin agentAdmin
		want  map[string]string // besides common
	}{
		{name: "no agent token: no admin URL", want: map[string]string{
			"NO_PROXY": "corp.example,10.0.0.0/8", "no_proxy": "corp.example,10.0.0.0/8"}},
		{name: "agent token", admin: agentAdmin{url: "http://127.0.0.1:8481", token: "agent-secret"}, want: map[string]string{
			"NO_PROXY": "corp.example,10.0.0.0/8,127.0.0.1", "no_proxy": "corp.example,10.0.0.0/8,127.0.0.1",
			"TOOLGUARD_ADMIN_URL": "http://127.0.0.1:8481", "TOOLGUARD_AGENT_TOKEN": "agent-secret"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]string{}
			for _, kv := range agentEnv(base, "http://127.0.0.1:8480", tc.admin, "/tmp/b.pem") {
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
				t.Errorf("got %d variables, want %d (ALL_PROXY and every TOOLGUARD_ADMIN_* dropped): %v", len(got), len(want), got)
			}
		})
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
