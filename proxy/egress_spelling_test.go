package proxy

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolguard/toolguard/problem"
)

// localSpellings are spellings of "this machine" that an agent can put in
// a URL or a CONNECT target. Each one reaches a listener on every address
// (the stand-ins below) unless the proxy normalises it first.
var localSpellings = []string{
	"127.0.0.1",
	"[::1]",
	"localhost",
	"0.0.0.0",
	"0",
	"[::]",
	"[::%25lo]",
	"[::ffff:0.0.0.0]",
	"[::1%25lo]",
	"[::ffff:127.0.0.1]",
	"[::ffff:7f00:1]",
	"[::127.0.0.1]",
	"2130706433",
	"0x7f.1",
	"017700000001",
	"127.1",
	"0177.0.0.1",
}

// sendRaw writes one raw request to the proxy on a new connection and
// reads the answer, so that a spelling reaches the proxy exactly as
// written.
func (p *netProxy) sendRaw(t *testing.T, raw string) *http.Response {
	t.Helper()
	conn, err := net.DialTimeout("tcp", p.url.Host, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := conn.Write([]byte(raw)); err != nil {
		t.Fatal(err)
	}
	method, _, _ := strings.Cut(raw, " ")
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: method})
	if err != nil {
		t.Fatalf("%q: %v", raw, err)
	}
	return resp
}

// refusedSpelling sends POST …/approve (plain) or CONNECT (connect) to
// host:port and checks the proxy answered 403 rejected with want in its
// detail.
func refusedSpelling(t *testing.T, p *netProxy, mode, host string, port int, want string) {
	t.Helper()
	target := host + ":" + strconv.Itoa(port)
	var raw string
	switch mode {
	case "http":
		raw = fmt.Sprintf("POST http://%s/v1/steps/%s/approve HTTP/1.1\r\nHost: %s\r\nContent-Length: 0\r\n\r\n", target, strings.Repeat("ab", 32), target)
	case "connect":
		raw = fmt.Sprintf("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	}
	resp := p.sendRaw(t, raw)
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("%s %s: status %d, want 403", mode, target, resp.StatusCode)
	}
	if pr := problemOf(t, resp); pr.Type != problem.Rejected || !strings.Contains(pr.Detail, want) {
		t.Errorf("%s %s: problem %+v, want %s about %q", mode, target, pr, problem.Rejected, want)
	}
}

// Regression: IPv6 zones and unspecified addresses bypassed every
// dial-time check. http://[::%25lo]:ADMINPORT/v1/steps/KEY/approve reached
// the admin API through the proxy (netip.Prefix.Contains is false for a
// zoned address, and 0.0.0.0 and :: were not this machine), and so did the
// other spellings here, plain and via CONNECT. Every spelling is now
// refused as one of toolguard's own listeners, and nothing reaches it.
func TestOwnListenerRefusedInEverySpelling(t *testing.T) {
	for _, mode := range []string{"http", "connect"} {
		for _, host := range localSpellings {
			t.Run(mode+"/"+host, func(t *testing.T) {
				admin := newCounter(t, "tcp", ":0") // the admin API, on every address
				p := startNetProxy(t, Options{
					SelfAddrs:    []string{admin.ln.Addr().String()},
					ConnectPorts: []int{admin.port()},
				}, "", false)
				refusedSpelling(t, p, mode, host, admin.port(), "its own listeners")
				if n := admin.hits.Load(); n != 0 {
					t.Errorf("the admin API got %d requests through the proxy, want 0", n)
				}
			})
		}
	}
}

// The same holds for an admin API on loopback only (the default
// 127.0.0.1:8481): every spelling that reaches loopback is refused.
func TestLoopbackListenerRefusedInEverySpelling(t *testing.T) {
	admin := newCounter(t, "tcp4", "127.0.0.1:0")
	admin6 := newCounter(t, "tcp6", "[::1]:"+strconv.Itoa(admin.port()))
	p := startNetProxy(t, Options{
		SelfAddrs:    []string{admin.ln.Addr().String()},
		ConnectPorts: []int{admin.port()},
	}, "", false)
	for _, mode := range []string{"http", "connect"} {
		for _, host := range localSpellings {
			refusedSpelling(t, p, mode, host, admin.port(), "its own listeners")
		}
	}
	if n := admin.hits.Load() + admin6.hits.Load(); n != 0 {
		t.Errorf("the admin API got %d requests through the proxy, want 0", n)
	}
}

// Regression: with 127.0.0.0/8 and ::1/128 in egress.deny, 0.0.0.0, [::],
// [::ffff:0.0.0.0] and [::1%25lo] still reached loopback services. A
// denied range is now refused in every spelling, plain and via CONNECT.
func TestEgressDenyInEverySpelling(t *testing.T) {
	tools := newCounter(t, "tcp", ":0") // a local service, on every address
	p := startNetProxy(t, Options{
		EgressDeny:   []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")},
		ConnectPorts: []int{tools.port()},
	}, "", false)
	for _, mode := range []string{"http", "connect"} {
		for _, host := range localSpellings {
			t.Run(mode+"/"+host, func(t *testing.T) {
				refusedSpelling(t, p, mode, host, tools.port(), "egress.deny")
			})
		}
	}
	if n := tools.hits.Load(); n != 0 {
		t.Errorf("the denied service got %d requests, want 0", n)
	}
}

// The default deny list holds every credential endpoint in every
// spelling: zones, mapped and compatible forms, legacy IPv4. Nothing is
// dialled, so this needs no cloud.
func TestEgressDenyDefaultSpellings(t *testing.T) {
	p := startNetProxy(t, Options{}, "", false)
	for _, host := range []string{
		"169.254.169.254", "[::ffff:169.254.169.254]", "[::169.254.169.254]", "2852039166", "0xa9.0xfe.0xa9.0xfe", "0251.0376.0251.0376",
		"[fd00:ec2::254]", "[fd00:ec2::254%25lo]", "[fd00:ec2::254%25eth0]",
		"169.254.170.2", "[::ffff:169.254.170.2]", "169.254.43522",
		"169.254.170.23", "[fd00:ec2::23]", "[fd00:ec2::23%25lo]",
		"100.100.100.200", "[::ffff:100.100.100.200]", "1684301000",
	} {
		for _, mode := range []string{"http", "connect"} {
			port := map[string]int{"http": 80, "connect": 443}[mode]
			refusedSpelling(t, p, mode, host, port, "egress.deny")
		}
	}
}

// A zoned address that no check refuses is refused all the same: the
// zone picks an interface, which the checks cannot reason about.
func TestZonedAddressRefused(t *testing.T) {
	p := startNetProxy(t, Options{}, "", false)
	refusedSpelling(t, p, "http", "[fe80::1%25lo]", 80, "IPv6 zone")
}
