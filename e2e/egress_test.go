package e2e

import (
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
)

// Regression: `curl -x PROXY http://vm:ADMINPORT/v1/steps` answered 200
// when /etc/hosts mapped vm to 127.0.0.1: only literal addresses were
// refused. The machine's own host name is such a name (it resolves to one
// of its addresses); the admin API listens on 0.0.0.0, which stands for
// every local address.
func TestAdminByHostNameRefused(t *testing.T) {
	name, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	if addrs, err := net.LookupHost(name); err != nil || len(addrs) == 0 {
		t.Skipf("this machine's host name %q does not resolve (%v): no name to reach it by", name, err)
	}
	up := newUpstream(t, false)
	s := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), invoiceRoute)})
	s.args = []string{"--admin-listen", "0.0.0.0:0"}
	s.env = append(s.env, "TOOLGUARD_ADMIN_TOKEN=operator-secret", "TOOLGUARD_UNMATCHED=guard")
	p := s.start(t)
	admin, err := url.Parse(p.adminURL)
	if err != nil {
		t.Fatal(err)
	}
	target := "http://" + net.JoinHostPort(name, admin.Port())
	c := p.client(t)
	for _, req := range []*http.Request{
		mustRequest(http.MethodGet, target+"/v1/steps"),
		mustRequest(http.MethodPost, target+"/v1/steps/abc/resolve"),
	} {
		r, body := do(t, c, req)
		if r.StatusCode != http.StatusForbidden || !strings.Contains(body, "urn:toolguard:rejected") || !strings.Contains(body, "own listeners") {
			t.Errorf("%s %s through the proxy: %d %s", req.Method, req.URL, r.StatusCode, body)
		}
	}
}

// egress.deny from the environment refuses what it names; an invalid
// entry is one line naming the setting both ways, and exit code 2.
func TestEgressDenyFromEnvironment(t *testing.T) {
	up := newUpstream(t, false)
	s := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), invoiceRoute)})
	s.env = append(s.env, "TOOLGUARD_EGRESS_DENY=169.254.169.254/32, 127.0.0.0/8")
	p := s.start(t)
	r, body := do(t, p.client(t), mustRequest(http.MethodGet, up.URL+"/v1/invoices"))
	if r.StatusCode != http.StatusForbidden || !strings.Contains(body, "egress.deny (127.0.0.0/8)") {
		t.Errorf("a denied address: %d %s", r.StatusCode, body)
	}
	if n := up.effects.Load(); n != 0 {
		t.Errorf("upstream effects %d, want 0", n)
	}

	res := tg(t, []string{"TOOLGUARD_EGRESS_DENY=10.0.0.0/8,10.0.0.0/99"}, "serve", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0")
	line := strings.TrimSpace(res.stderr)
	if res.code != 2 || strings.Count(line, "\n") != 0 || !strings.Contains(line, "egress.deny") ||
		!strings.Contains(line, "TOOLGUARD_EGRESS_DENY") || !strings.Contains(line, `"10.0.0.0/99"`) {
		t.Errorf("an invalid CIDR: exit %d, stderr %q", res.code, res.stderr)
	}
}

// Regression: http://[::%25lo]:ADMINPORT/v1/steps/KEY/approve reached the
// admin API through the proxy (zones, 0.0.0.0 and :: bypassed the dial-time
// checks). The real binary refuses every spelling of this machine.
func TestAdminBySpellingRefused(t *testing.T) {
	up := newUpstream(t, false)
	s := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), invoiceRoute)})
	s.args = []string{"--admin-listen", "0.0.0.0:0"}
	s.env = append(s.env, "TOOLGUARD_ADMIN_TOKEN=operator-secret")
	p := s.start(t)
	admin, err := url.Parse(p.adminURL)
	if err != nil {
		t.Fatal(err)
	}
	c := p.client(t)
	for _, host := range []string{"[::%25lo]", "[::]", "0.0.0.0", "[::ffff:0.0.0.0]", "[::1%25lo]", "[::ffff:127.0.0.1]", "[::127.0.0.1]", "2130706433", "0x7f.1", "017700000001"} {
		target := "http://" + host + ":" + admin.Port() + "/v1/steps/" + strings.Repeat("ab", 32) + "/approve"
		r, body := do(t, c, mustRequest(http.MethodPost, target))
		if r.StatusCode != http.StatusForbidden || !strings.Contains(body, "own listeners") {
			t.Errorf("POST %s through the proxy: %d %s", target, r.StatusCode, body)
		}
	}
}
