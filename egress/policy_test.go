package egress

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
)

// thisMachine is the address of this machine's one interface in tests.
var thisMachine = netip.MustParseAddr("192.0.2.77")

// newTestPolicy is New with this machine's interfaces replaced by
// thisMachine.
func newTestPolicy(c Config) *Policy {
	p := New(c)
	p.localAddrs = func() []netip.Addr { return []netip.Addr{thisMachine} }
	return p
}

// namedHosts are the hosts rules name, without ports.
type namedHosts []string

func (n namedHosts) Intercepts(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	for _, h := range n {
		if strings.EqualFold(h, host) {
			return true
		}
	}
	return false
}

func TestIsSelfAddr(t *testing.T) {
	p := newTestPolicy(Config{SelfAddrs: []string{"127.0.0.1:8481", "[::]:8480", "10.1.1.1:9000", "bad", "127.0.0.1:0"}})
	tests := []struct {
		addr string
		want bool
	}{
		{addr: "127.0.0.1:8481", want: true},
		{addr: "127.0.0.2:8481", want: true}, // any loopback address for a loopback listener
		{addr: "[::1]:8481", want: true},
		{addr: "[::ffff:127.0.0.1]:8481", want: true},
		{addr: "0.0.0.0:8481", want: true}, // dialling 0.0.0.0 reaches this machine
		{addr: "127.0.0.1:8482", want: false},
		{addr: "192.0.2.77:8481", want: false}, // the listener is on loopback only
		{addr: "192.0.2.77:8480", want: true},  // [::] stands for every local address
		{addr: "[::1]:8480", want: true},
		{addr: "127.9.9.9:8480", want: true},
		{addr: "192.0.2.78:8480", want: false}, // not this machine
		{addr: "10.1.1.1:9000", want: true},
		{addr: "10.1.1.2:9000", want: false},
		{addr: "127.0.0.1:0", want: false},
	}
	for _, tc := range tests {
		if got := p.isSelfAddr(netip.MustParseAddrPort(tc.addr)); got != tc.want {
			t.Errorf("isSelfAddr(%s) = %v, want %v", tc.addr, got, tc.want)
		}
	}
}

// Check is the whole policy for a target as named, in order: own
// listeners, then hosts and ports (for hosts no rule names), then the
// address rules for a host that is an address. It looks nothing up.
func TestCheck(t *testing.T) {
	allow := []string{"a.example", "*.b.example", "c.example:8443", "10.0.0.1"}
	tests := []struct {
		name    string
		config  Config
		kind    Kind
		target  string
		want    error  // nil: allowed
		message string // the refusal's text, when set
	}{
		{name: "any host without an allowlist", kind: Request, target: "api.example.com:443"},
		{name: "any port for a request", kind: Request, target: "api.example.com:8080"},
		{name: "no port", kind: Request, target: "api.example.com"},
		{name: "allowed host", config: Config{AllowHosts: allow}, kind: Request, target: "a.example:80"},
		{name: "allowed host, any case", config: Config{AllowHosts: allow}, kind: Request, target: "A.Example:80"},
		{name: "allowed suffix", config: Config{AllowHosts: allow}, kind: Request, target: "x.b.example:443"},
		{name: "suffix is not the domain", config: Config{AllowHosts: allow}, kind: Request, target: "b.example:443", want: ErrHostNotAllowed},
		{name: "allowed host and port", config: Config{AllowHosts: allow}, kind: Request, target: "c.example:8443"},
		{name: "allowed host, other port", config: Config{AllowHosts: allow}, kind: Request, target: "c.example:443", want: ErrHostNotAllowed},
		{name: "allowed address", config: Config{AllowHosts: allow}, kind: Request, target: "10.0.0.1:80"},
		{name: "host not allowed", config: Config{AllowHosts: allow}, kind: Request, target: "d.example:443", want: ErrHostNotAllowed,
			message: "toolguard does not proxy requests to d.example:443: not named in rules, and not on upstream.allow_hosts"},
		{name: "named host not allowed", config: Config{AllowHosts: allow, Rules: namedHosts{"rules.example"}}, kind: Request, target: "rules.example:443"},
		{name: "tunnel to a default port", kind: Tunnel, target: "d.example:443"},
		{name: "tunnel to port 80", kind: Tunnel, target: "d.example:80"},
		{name: "tunnel to another port", kind: Tunnel, target: "d.example:22", want: ErrTunnelNotAllowed,
			message: "toolguard does not tunnel to d.example:22 (not named in rules, and not an allowed host and port)"},
		{name: "tunnel without a port", kind: Tunnel, target: "d.example", want: ErrTunnelNotAllowed},
		{name: "tunnel to a named host", config: Config{Rules: namedHosts{"rules.example"}}, kind: Tunnel, target: "rules.example:22"},
		{name: "tunnel to a configured port", config: Config{ConnectPorts: []int{8443}}, kind: Tunnel, target: "d.example:8443"},
		{name: "tunnel with no ports", config: Config{ConnectPorts: []int{}}, kind: Tunnel, target: "d.example:443", want: ErrTunnelNotAllowed},
		{name: "tunnel to a host not allowed", config: Config{AllowHosts: allow}, kind: Tunnel, target: "d.example:443", want: ErrTunnelNotAllowed},
		{name: "tunnel to an allowed host", config: Config{AllowHosts: allow}, kind: Tunnel, target: "a.example:443"},
		{name: "own listener", config: Config{SelfAddrs: []string{"127.0.0.1:8481"}}, kind: Request, target: "127.0.0.1:8481", want: ErrSelf,
			message: "toolguard does not proxy requests to its own listeners"},
		{name: "own listener as localhost", config: Config{SelfAddrs: []string{"127.0.0.1:8481"}}, kind: Tunnel, target: "LocalHost:8481", want: ErrSelf},
		{name: "own listener over IPv6 loopback", config: Config{SelfAddrs: []string{"[::1]:8481"}}, kind: Request, target: "localhost:8481", want: ErrSelf},
		{name: "own listener in legacy IPv4", config: Config{SelfAddrs: []string{"127.0.0.1:8481"}}, kind: Request, target: "2130706433:8481", want: ErrSelf},
		{name: "own listener named in rules", config: Config{SelfAddrs: []string{"127.0.0.1:8481"}, Rules: namedHosts{"127.0.0.1"}}, kind: Request, target: "127.0.0.1:8481", want: ErrSelf},
		{name: "own listener before the allowlist", config: Config{SelfAddrs: []string{"127.0.0.1:8481"}, AllowHosts: allow}, kind: Tunnel, target: "127.0.0.1:8481", want: ErrSelf},
		{name: "another port of this machine", config: Config{SelfAddrs: []string{"127.0.0.1:8481"}}, kind: Request, target: "127.0.0.1:8482"},
		{name: "denied address", kind: Request, target: "169.254.169.254:80", want: ErrDenied,
			message: "refused to connect to 169.254.169.254:80: the address is in egress.deny (169.254.169.254/32)"},
		{name: "denied address, mapped", kind: Tunnel, target: "[::ffff:169.254.169.254]:443", want: ErrDenied,
			message: "refused to connect to ::ffff:169.254.169.254 (169.254.169.254:443): the address is in egress.deny (169.254.169.254/32)"},
		{name: "denied address named in rules", config: Config{Rules: namedHosts{"169.254.169.254"}}, kind: Request, target: "169.254.169.254:80", want: ErrDenied},
		{name: "nothing denied", config: Config{Deny: []netip.Prefix{}}, kind: Request, target: "169.254.169.254:80"},
		{name: "configured deny", config: Config{Deny: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}, kind: Request, target: "012.1:80", want: ErrDenied},
		{name: "zone", kind: Request, target: "[fe80::1%lo]:80", want: ErrZone,
			message: "refused to connect to fe80::1%lo ([fe80::1]:80): toolguard does not connect to addresses with an IPv6 zone (%lo)"},
		{name: "a name is not looked up", config: Config{Resolver: failResolver{t}}, kind: Request, target: "metadata.test:80"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := newTestPolicy(tc.config).Check(tc.kind, tc.target)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Check(%s, %s) = %v, want nil", tc.kind, tc.target, err)
				}
				return
			}
			var e *Error
			if !errors.Is(err, tc.want) || !errors.Is(err, ErrRefused) || !errors.As(err, &e) {
				t.Fatalf("Check(%s, %s) = %v, want an *Error wrapping %v and ErrRefused", tc.kind, tc.target, err, tc.want)
			}
			if tc.message != "" && err.Error() != tc.message {
				t.Errorf("Check(%s, %s) says %q, want %q", tc.kind, tc.target, err, tc.message)
			}
		})
	}
}

// failResolver fails the test when it is asked.
type failResolver struct{ t *testing.T }

func (r failResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.t.Errorf("looked up %s", host)
	return nil, errors.New("no lookups here")
}

// An address that stands for this machine (0.0.0.0/8, ::) is inside every
// deny entry that holds a loopback address or an address of this
// machine.
func TestDeniedThisHost(t *testing.T) {
	tests := []struct {
		deny string
		addr string
		want bool
	}{
		{deny: "127.0.0.0/8", addr: "0.0.0.0", want: true},
		{deny: "127.0.0.1/32", addr: "0.1.2.3", want: true},
		{deny: "::1/128", addr: "::", want: true},
		{deny: "::1/128", addr: "::ffff:0.0.0.0", want: true},
		{deny: "192.0.2.0/24", addr: "0.0.0.0", want: true}, // holds this machine's address
		{deny: "10.0.0.0/8", addr: "0.0.0.0", want: false},
		{deny: "10.0.0.0/8", addr: "10.1.2.3", want: true},
		{deny: "10.0.0.0/8", addr: "::ffff:10.1.2.3", want: true},
		{deny: "10.0.0.0/8", addr: "11.0.0.1", want: false},
	}
	for _, tc := range tests {
		p := newTestPolicy(Config{Deny: []netip.Prefix{netip.MustParsePrefix(tc.deny)}})
		if _, got := p.denied(netip.MustParseAddr(tc.addr)); got != tc.want {
			t.Errorf("deny %s: denied(%s) = %v, want %v", tc.deny, tc.addr, got, tc.want)
		}
	}
}

func TestKindString(t *testing.T) {
	if Request.String() != "request" || Tunnel.String() != "tunnel" {
		t.Errorf("kinds: %s, %s", Request, Tunnel)
	}
}
