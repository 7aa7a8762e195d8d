package egress

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeResolver answers lookups from a table and records the networks
// asked for; a name it does not hold is not found.
type fakeResolver struct {
	names map[string][]netip.Addr
	mu    sync.Mutex
	asked []string // network host
}

func (r *fakeResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	r.asked = append(r.asked, network+" "+host)
	r.mu.Unlock()
	ips, ok := r.names[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return ips, nil
}

// listener accepts connections on network/addr and counts them; each
// accept also signals on accepts.
type listener struct {
	ln       net.Listener
	accepted atomic.Int64
	accepts  chan struct{}
}

func listen(t *testing.T, network, addr string) *listener {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	l := &listener{ln: ln, accepts: make(chan struct{}, 64)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.accepted.Add(1)
			c.Close()
			select {
			case l.accepts <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return l
}

func (l *listener) port() string { return strconv.Itoa(l.ln.Addr().(*net.TCPAddr).Port) }

// awaitAccepted waits until the listener has counted n connections: a
// connection is established before the listener's Accept returns it, so
// a test that connected waits for its count before the next one counts.
func (l *listener) awaitAccepted(t *testing.T, n int64) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for l.accepted.Load() < n {
		select {
		case <-l.accepts:
		case <-timeout:
			t.Fatalf("the listener accepted %d connections, want %d", l.accepted.Load(), n)
		}
	}
}

// Dial resolves once, checks every address and dials the checked one; a
// name with any refused address is refused whole, and nothing is dialled.
func TestDial(t *testing.T) {
	tools := listen(t, "tcp4", "127.0.0.1:0")
	port := tools.port()
	loopback := netip.MustParseAddr("127.0.0.1")
	tests := []struct {
		name    string
		config  Config
		names   map[string][]netip.Addr
		network string
		addr    string
		want    error  // nil: connected
		refused bool   // want an *Error (ErrRefused)
		message string // the error's text, when set
	}{
		{name: "a name", names: map[string][]netip.Addr{"tools.test": {loopback}}, addr: "tools.test:" + port},
		{name: "an address", addr: "127.0.0.1:" + port},
		{name: "a legacy spelling, not looked up", addr: "2130706433:" + port},
		{name: "a mapped address, dialled as IPv4", names: map[string][]netip.Addr{"tools.test": {netip.MustParseAddr("::ffff:127.0.0.1")}}, network: "tcp4", addr: "tools.test:" + port},
		{name: "the next address when one fails", names: map[string][]netip.Addr{"tools.test": {netip.MustParseAddr("127.0.0.2"), loopback}}, addr: "tools.test:" + port},
		{name: "a name of an own listener", config: Config{SelfAddrs: []string{"127.0.0.1:" + port}}, names: map[string][]netip.Addr{"vm.test": {loopback}},
			addr: "vm.test:" + port, want: ErrSelf, refused: true,
			message: "refused to connect to vm.test (127.0.0.1:" + port + "): toolguard does not proxy requests to its own listeners"},
		{name: "a name in the deny list", config: Config{Deny: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}, names: map[string][]netip.Addr{"tools.test": {loopback}},
			addr: "tools.test:" + port, want: ErrDenied, refused: true,
			message: "refused to connect to tools.test (127.0.0.1:" + port + "): the address is in egress.deny (127.0.0.0/8)"},
		{name: "one denied address refuses the name", names: map[string][]netip.Addr{"mixed.test": {loopback, netip.MustParseAddr("169.254.169.254")}},
			addr: "mixed.test:" + port, want: ErrDenied, refused: true},
		{name: "a zoned address", names: map[string][]netip.Addr{"zoned.test": {netip.MustParseAddr("fe80::1%lo")}}, addr: "zoned.test:" + port, want: ErrZone, refused: true},
		{name: "an unknown name", addr: "nowhere.test:" + port, message: "dial tcp: lookup nowhere.test: no such host"},
		{name: "a name without addresses", names: map[string][]netip.Addr{"empty.test": {}}, addr: "empty.test:" + port, message: "dial tcp: lookup empty.test: no addresses"},
		{name: "no port", addr: "tools.test", message: "dial tcp: address tools.test: missing port in address"},
		{name: "a bad port", addr: "tools.test:99999", message: `dial tcp: invalid port "99999"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tools.accepted.Load()
			tc.config.Resolver = &fakeResolver{names: tc.names}
			network := tc.network
			if network == "" {
				network = "tcp"
			}
			c, err := newTestPolicy(tc.config).Dial(context.Background(), network, tc.addr)
			if tc.want == nil && tc.message == "" {
				if err != nil {
					t.Fatalf("Dial(%s) = %v, want a connection", tc.addr, err)
				}
				c.Close()
				tools.awaitAccepted(t, before+1)
				return
			}
			if err == nil {
				c.Close()
				t.Fatalf("Dial(%s) connected, want an error", tc.addr)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("Dial(%s) = %v, want %v", tc.addr, err, tc.want)
			}
			if got := errors.Is(err, ErrRefused); got != tc.refused {
				t.Errorf("Dial(%s) = %v: refused %v, want %v", tc.addr, err, got, tc.refused)
			}
			if tc.message != "" && err.Error() != tc.message {
				t.Errorf("Dial(%s) says %q, want %q", tc.addr, err, tc.message)
			}
			if n := tools.accepted.Load() - before; tc.refused && n != 0 {
				t.Errorf("Dial(%s) refused, but %d connections reached the listener", tc.addr, n)
			}
		})
	}
}

// The network asks the resolver for the address family it dials.
func TestDialAsksForTheNetworksFamily(t *testing.T) {
	for network, want := range map[string]string{"tcp": "ip", "tcp4": "ip4", "tcp6": "ip6"} {
		r := &fakeResolver{}
		New(Config{Resolver: r}).Dial(context.Background(), network, "nowhere.test:80")
		if len(r.asked) != 1 || r.asked[0] != want+" nowhere.test" {
			t.Errorf("Dial(%s) asked %q, want [%s nowhere.test]", network, r.asked, want)
		}
	}
}

// A cancelled dial stops at the first address.
func TestDialStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := &fakeResolver{names: map[string][]netip.Addr{"two.test": {netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.2")}}}
	if _, err := New(Config{Resolver: r}).Dial(ctx, "tcp", "two.test:1"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Dial = %v, want context.Canceled", err)
	}
}

// hostports are spellings of "this machine" on port, as a client may put
// them in a target: each one reaches a listener on every address unless
// it is normalised first.
func hostports(port string) []string {
	var out []string
	for _, host := range []string{
		"127.0.0.1", "[::1]", "localhost", "0.0.0.0", "0", "[::]", "[::%lo]", "[::ffff:0.0.0.0]", "[::1%lo]",
		"[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[::127.0.0.1]", "2130706433", "0x7f.1", "017700000001", "127.1", "0177.0.0.1",
	} {
		out = append(out, host+":"+port)
	}
	return out
}

// Every spelling of this machine is one of toolguard's own listeners, for
// a listener on every address and for one on loopback; Check and Dial
// both refuse it, and nothing reaches the listener. (The proxy's
// TestOwnListenerRefusedInEverySpelling sends them through a real proxy.)
func TestOwnListenerInEverySpelling(t *testing.T) {
	for _, listenOn := range []string{":0", "127.0.0.1:0"} {
		own := listen(t, "tcp", listenOn)
		p := New(Config{SelfAddrs: []string{own.ln.Addr().String()}, Resolver: &fakeResolver{names: map[string][]netip.Addr{"localhost": {netip.MustParseAddr("127.0.0.1")}}}})
		for _, target := range hostports(own.port()) {
			if err := p.Check(Request, target); !errors.Is(err, ErrSelf) {
				t.Errorf("listener on %s: Check(%s) = %v, want ErrSelf", listenOn, target, err)
			}
			if c, err := p.Dial(context.Background(), "tcp", target); !errors.Is(err, ErrSelf) {
				if c != nil {
					c.Close()
				}
				t.Errorf("listener on %s: Dial(%s) = %v, want ErrSelf", listenOn, target, err)
			}
		}
		if n := own.accepted.Load(); n != 0 {
			t.Errorf("listener on %s: reached %d times", listenOn, n)
		}
	}
}

// Every spelling of this machine is inside a deny list that holds
// loopback.
func TestDenyInEverySpelling(t *testing.T) {
	svc := listen(t, "tcp", ":0")
	port, _ := strconv.Atoi(svc.port())
	p := New(Config{
		ConnectPorts: []int{port}, // an operator allowed the port: only the address rules stand
		Deny:         []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")},
		Resolver:     &fakeResolver{names: map[string][]netip.Addr{"localhost": {netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()}}},
	})
	for _, target := range hostports(svc.port()) {
		if !strings.HasPrefix(target, "localhost:") { // a name: Check looks nothing up
			if err := p.Check(Tunnel, target); !errors.Is(err, ErrDenied) {
				t.Errorf("Check(%s) = %v, want ErrDenied", target, err)
			}
		}
		if c, err := p.Dial(context.Background(), "tcp", target); !errors.Is(err, ErrDenied) {
			if c != nil {
				c.Close()
			}
			t.Errorf("Dial(%s) = %v, want ErrDenied", target, err)
		}
	}
	if n := svc.accepted.Load(); n != 0 {
		t.Errorf("the denied service was reached %d times", n)
	}
}
