package proxy

import (
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/problem"
)

// anyLocalAddr is an address of this machine other than loopback, to show
// that a listener on 0.0.0.0 is reached through every local address;
// loopback when the machine has no other.
func anyLocalAddr() netip.Addr {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		if ip, ok := netip.AddrFromSlice(ipn.IP); ok && ip.Unmap().Is4() && !ip.IsLoopback() && !ip.IsLinkLocalUnicast() {
			return ip.Unmap()
		}
	}
	return netip.MustParseAddr("127.0.0.1")
}

// Regression: the admin API was reachable through the proxy by a hostname
// that resolves to loopback (only literal addresses were refused). The
// address dialled is now checked, for plain HTTP, tunnels and intercepted
// tunnels, IPv4 and IPv6, and a listener on 0.0.0.0.
func TestOwnListenerRefusedByName(t *testing.T) {
	listeners := []struct {
		name    string
		network string
		listen  string
		target  netip.Addr
	}{
		{name: "ipv4", network: "tcp4", listen: "127.0.0.1:0", target: netip.MustParseAddr("127.0.0.1")},
		{name: "ipv6", network: "tcp6", listen: "[::1]:0", target: netip.IPv6Loopback()},
		{name: "all interfaces", network: "tcp4", listen: "0.0.0.0:0", target: anyLocalAddr()},
	}
	modes := []string{"http", "connect", "intercepted"}
	for _, l := range listeners {
		for _, mode := range modes {
			t.Run(l.name+"/"+mode, func(t *testing.T) {
				admin := newCounter(t, l.network, l.listen) // stands in for the admin API
				port := admin.port()
				opts := Options{
					SelfAddrs:    []string{admin.ln.Addr().String()},
					ConnectPorts: []int{port}, // an operator allowed the port: only the dial check stands
					Resolver:     fakeResolver{"vm.test": {l.target}},
				}
				if mode == "intercepted" {
					opts.Unmatched = policy.UnmatchedGuard // intercept every tunnel
				}
				p := startNetProxy(t, opts, "", mode == "intercepted")
				target := "vm.test:" + strconv.Itoa(port)
				var resp *http.Response
				switch mode {
				case "http", "intercepted":
					scheme := map[string]string{"http": "http", "intercepted": "https"}[mode]
					var err error
					resp, err = p.client().Get(scheme + "://" + target + "/v1/steps")
					if err != nil {
						t.Fatal(err)
					}
				case "connect":
					resp, _, _ = p.connect(t, target)
				}
				if resp.StatusCode != http.StatusForbidden || resp.Header.Get(HeaderOutcome) != OutcomeBlocked {
					t.Errorf("status %d, outcome %q; want 403 blocked", resp.StatusCode, resp.Header.Get(HeaderOutcome))
				}
				pr := problemOf(t, resp)
				if pr.Type != problem.Rejected || !strings.Contains(pr.Detail, "its own listeners") {
					t.Errorf("problem %+v, want %s about its own listeners", pr, problem.Rejected)
				}
				if n := admin.hits.Load(); n != 0 {
					t.Errorf("the listener got %d requests through the proxy, want 0", n)
				}
				blocked := 0
				for _, line := range p.decisionLines(t, "proxied request") {
					if line["outcome"] == OutcomeBlocked {
						blocked++
					}
				}
				if blocked != 1 {
					t.Errorf("%d blocked decision lines, want 1:\n%s", blocked, p.logs.String())
				}
			})
		}
	}
}

// The default deny list refuses the cloud metadata addresses by any name,
// before anything is dialled; loopback stays allowed.
func TestEgressDenyDefault(t *testing.T) {
	tools := newCounter(t, "tcp4", "127.0.0.1:0")
	p := startNetProxy(t, Options{
		Resolver: fakeResolver{
			"metadata.test":  {netip.MustParseAddr("169.254.169.254")},
			"metadata6.test": {netip.MustParseAddr("fd00:ec2::254")},
			"tools.test":     {netip.MustParseAddr("127.0.0.1")},
		},
	}, "", false)
	for _, target := range []string{"metadata.test:80", "metadata6.test:80", "169.254.169.254:80"} {
		resp, err := p.client().Get("http://" + target + "/latest/meta-data/iam/security-credentials/")
		if err != nil {
			t.Fatal(err)
		}
		if pr := problemOf(t, resp); resp.StatusCode != http.StatusForbidden || !strings.Contains(pr.Detail, "egress.deny") {
			t.Errorf("GET %s: %d %+v, want 403 naming egress.deny", target, resp.StatusCode, pr)
		}
		cresp, _, _ := p.connect(t, strings.Replace(target, ":80", ":443", 1))
		if pr := problemOf(t, cresp); cresp.StatusCode != http.StatusForbidden || !strings.Contains(pr.Detail, "egress.deny") {
			t.Errorf("CONNECT %s: %d %+v, want 403 naming egress.deny", target, cresp.StatusCode, pr)
		}
	}
	// Loopback is not denied by default: sidecar agents call local tools.
	resp, err := p.client().Post("http://tools.test:"+strconv.Itoa(tools.port())+"/run", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || tools.hits.Load() != 1 {
		t.Errorf("local tool: status %d, %d hits; want 201 and 1", resp.StatusCode, tools.hits.Load())
	}
}

// An operator's deny list refuses plain requests, tunnels and guarded
// calls to the ranges it names, and nothing reaches them.
func TestEgressDenyConfigured(t *testing.T) {
	tools := newCounter(t, "tcp4", "127.0.0.1:0")
	port := strconv.Itoa(tools.port())
	rule := "api: tools\nhosts: [\"tools.test:" + port + "\"]\ncredential: none\nroutes:\n  - name: run\n    match: POST /run\n    effect: irreversible\n    key: {fields: [job]}\n"
	p := startNetProxy(t, Options{
		EgressDeny:   []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		ConnectPorts: []int{tools.port()},
		Resolver:     fakeResolver{"tools.test": {netip.MustParseAddr("127.0.0.1")}},
	}, rule, false)

	get, err := p.client().Get("http://tools.test:" + port + "/status")
	if err != nil {
		t.Fatal(err)
	}
	if pr := problemOf(t, get); get.StatusCode != http.StatusForbidden || !strings.Contains(pr.Detail, "egress.deny (127.0.0.0/8)") {
		t.Errorf("GET: %d %+v, want 403 naming the denied range", get.StatusCode, pr)
	}
	post, err := p.client().Post("http://tools.test:"+port+"/run", "application/json", strings.NewReader(`{"job":"a"}`))
	if err != nil {
		t.Fatal(err)
	}
	pr := problemOf(t, post)
	if post.StatusCode != http.StatusForbidden || pr.Type != problem.Rejected || pr.Key == "" {
		t.Errorf("guarded POST: %d %+v, want 403 rejected with its key", post.StatusCode, pr)
	}
	// Nothing was sent: the step is recorded as not executed.
	if st, err := p.j.Get(pr.Key); err != nil || st.Status != journal.StatusFailed {
		t.Errorf("guarded POST: step %+v (%v), want status failed", st, err)
	}
	cresp, _, _ := p.connect(t, "tools.test:"+port)
	if cresp.StatusCode != http.StatusForbidden {
		t.Errorf("CONNECT: %d, want 403", cresp.StatusCode)
	}
	if n := tools.hits.Load(); n != 0 {
		t.Errorf("the denied upstream got %d requests, want 0", n)
	}
	var d net.Dialer
	if c, err := d.Dial("tcp", tools.ln.Addr().String()); err != nil {
		t.Fatalf("the upstream itself is reachable (the refusal is the proxy's): %v", err)
	} else {
		c.Close()
	}
}
