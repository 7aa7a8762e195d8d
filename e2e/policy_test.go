package e2e

import (
	"net/http"
	"strings"
	"testing"
)

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
