package e2e

import (
	"net/http"
	"strings"
	"testing"
)

func TestUnmatchedPolicies(t *testing.T) {
	for _, tc := range []struct {
		policy      string
		wantEffects int64
		wantStatus  int
		wantOutcome string
	}{
		{policy: "passthrough", wantEffects: 2, wantStatus: 201, wantOutcome: "passthrough"},
		{policy: "guard", wantEffects: 1, wantStatus: 201, wantOutcome: "replayed"},
		{policy: "reject", wantEffects: 0, wantStatus: 403, wantOutcome: "blocked"},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			// HTTPS where the policy makes toolguard intercept every host;
			// a passed-through HTTPS call is a tunnel it cannot mark.
			up := newUpstream(t, tc.policy != "passthrough")
			s := newSetup(t, map[string]string{"other.yaml": ruleFile("elsewhere.example", invoiceRoute)})
			s.env = append(s.env, "TOOLGUARD_UNMATCHED="+tc.policy, "TOOLGUARD_UPSTREAM_CONNECT_PORTS="+up.port())
			if tc.policy != "passthrough" {
				s.args = append(s.args, "--config", writeConfig(t, s.dir, "upstream:\n  ca_file: "+up.caPEM(t, s.dir)+"\n"))
			}
			p := s.start(t)
			c := p.client(t)
			var r *http.Response
			for range 2 {
				r, _ = post(t, c, up.URL+"/v1/emails", `{"to":"a@example.com"}`)
			}
			if got := up.effects.Load(); got != tc.wantEffects {
				t.Errorf("effects = %d, want %d", got, tc.wantEffects)
			}
			if r.StatusCode != tc.wantStatus || r.Header.Get("Toolguard-Outcome") != tc.wantOutcome {
				t.Errorf("second call: %d %q, want %d %q", r.StatusCode, r.Header.Get("Toolguard-Outcome"), tc.wantStatus, tc.wantOutcome)
			}
			// Reads pass through under every policy.
			if r, body := do(t, c, mustRequest("GET", up.URL+"/v1/ping")); body != "pong" || r.Header.Get("Toolguard-Outcome") != "passthrough" {
				t.Errorf("GET: %q %q", body, r.Header.Get("Toolguard-Outcome"))
			}
		})
	}
}

func TestAdminToken(t *testing.T) {
	s := newSetup(t, map[string]string{"billing.yaml": ruleFile("x.example", invoiceRoute)})
	s.env = append(s.env, "TOOLGUARD_ADMIN_TOKEN=op-secret", "TOOLGUARD_ADMIN_AGENT_TOKEN=agent-secret")
	p := s.start(t)
	check := func(method, path, token string, want int) {
		t.Helper()
		req, _ := http.NewRequest(method, p.adminURL+path, strings.NewReader(`{"outcome":"committed"}`))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := (&http.Client{Transport: &http.Transport{Proxy: nil}}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s %s with %q: %d, want %d", method, path, token, resp.StatusCode, want)
		}
	}
	check("GET", "/healthz", "", 200)
	check("GET", "/readyz", "", 200)
	check("GET", "/v1/steps", "", 401)
	check("GET", "/v1/steps", "wrong", 401)
	check("GET", "/v1/steps", "op-secret", 200)
	check("GET", "/v1/steps", "agent-secret", 200)
	check("POST", "/v1/steps/abc/approve", "agent-secret", 403)
	check("POST", "/v1/steps/abc/resolve", "agent-secret", 403)
	check("POST", "/v1/steps/abc/resolve", "op-secret", 404)
	check("GET", "/v1/steps/abc/approve", "op-secret", 405)
	check("GET", "/v1/whoami", "", 401)
	check("GET", "/v1/whoami", "agent-secret", 200)
	check("GET", "/ui/", "", 200) // static; its pages call the API with a token
}

// A CONNECT to a host no rule names is a plain tunnel: the client sees the
// upstream's own certificate, not one signed by toolguard's CA.
func TestConnectTunnelsUnnamedHosts(t *testing.T) {
	up := newUpstream(t, true)
	s := newSetup(t, map[string]string{"other.yaml": ruleFile("elsewhere.example", invoiceRoute)})
	s.env = append(s.env, "TOOLGUARD_UPSTREAM_CONNECT_PORTS="+up.port())
	p := s.start(t)
	tr := up.Client().Transport.(*http.Transport).Clone()
	tr.Proxy = http.ProxyURL(p.proxyURL)
	resp, body := do(t, &http.Client{Transport: tr}, mustRequest("GET", up.URL+"/v1/ping"))
	if body != "pong" || resp.TLS == nil || resp.TLS.PeerCertificates[0].Issuer.CommonName == "toolguard local CA" {
		t.Fatalf("tunnel: body %q, TLS %v", body, resp.TLS != nil)
	}
}

// The contract's query GET /v1/steps?status=&workflow=&hold= with empty
// values filters nothing.
func TestStepsEmptyFilters(t *testing.T) {
	up := newUpstream(t, false)
	p := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), invoiceRoute)}).start(t)
	post(t, p.client(t), up.URL+"/v1/invoices", invoiceBody)
	if steps := stepsOf(t, p, "?status=&workflow=&hold="); len(steps) != 1 {
		t.Fatalf("empty filters: %d steps, want 1", len(steps))
	}
	if steps := stepsOf(t, p, "?hold=none"); len(steps) != 1 {
		t.Fatalf("hold=none: %d steps, want 1", len(steps))
	}
	if steps := stepsOf(t, p, "?hold=needs_review"); len(steps) != 0 {
		t.Fatalf("hold=needs_review: %d steps, want 0", len(steps))
	}
}
