package egress

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Rules tells which hosts the rules name: those are reached whatever the
// allowlist and the CONNECT ports say. *rules.Set is one.
type Rules interface {
	// Intercepts reports whether some rule names the host of hostport.
	Intercepts(hostport string) bool
}

// Resolver looks names up; *net.Resolver is one. Tests pass their own.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Config is the policy. Zero values take the documented defaults.
type Config struct {
	// AllowHosts are the hosts no rule names that may be reached (host,
	// host:port or *.example.com); empty allows every host.
	AllowHosts []string
	// ConnectPorts are the ports a tunnel to a host no rule names may
	// open; nil means 443 and 80, empty means none.
	ConnectPorts []int
	// SelfAddrs are toolguard's own listen addresses (ip:port); an
	// unspecified address stands for every address of this machine.
	// Entries that are not an address with a port are ignored.
	SelfAddrs []string
	// Deny are the destinations never dialled; nil means DefaultDeny,
	// empty means none.
	Deny []netip.Prefix
	// Rules names the hosts reached whatever AllowHosts and ConnectPorts
	// say; nil names none.
	Rules Rules
	// Resolver turns names into the addresses that are checked and
	// dialled; nil means net.DefaultResolver.
	Resolver Resolver
	// DialTimeout bounds a connection attempt to one address; zero means
	// 10s.
	DialTimeout time.Duration
}

// DefaultDeny is the deny list used when Config.Deny is nil: the
// endpoints that hand out instance or workload credentials to whoever asks
// from the machine (docs/egress.md lists the sources):
//   - 169.254.169.254, fd00:ec2::254: the instance metadata service (AWS
//     EC2, and the same address on GCP, Azure, OpenStack, ...);
//     https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-data-retrieval.html
//   - 169.254.170.2: AWS ECS task metadata and task-role credentials;
//     https://docs.aws.amazon.com/AmazonECS/latest/developerguide/task-iam-roles.html
//   - 169.254.170.23, fd00:ec2::23: the EKS Pod Identity agent;
//     https://docs.aws.amazon.com/eks/latest/userguide/pod-id-agent-setup.html
//   - 100.100.100.200: the Alibaba Cloud ECS metadata service;
//     https://www.alibabacloud.com/help/en/ecs/user-guide/overview-of-ecs-instance-metadata
var DefaultDeny = []netip.Prefix{
	netip.MustParsePrefix("169.254.169.254/32"),
	netip.MustParsePrefix("fd00:ec2::254/128"),
	netip.MustParsePrefix("169.254.170.2/32"),
	netip.MustParsePrefix("169.254.170.23/32"),
	netip.MustParsePrefix("fd00:ec2::23/128"),
	netip.MustParsePrefix("100.100.100.200/32"),
}

// Policy decides which targets toolguard may reach, so that it is never an
// open relay nor a way to its own listeners or the denied ranges. It is
// safe for concurrent use.
type Policy struct {
	allow []string // host, host:port or *.suffix; empty allows every host
	ports []int    // CONNECT ports for hosts no rule names
	self  []netip.AddrPort
	deny  []netip.Prefix
	rules Rules
	// resolver turns names into the addresses that are checked and dialled.
	resolver Resolver
	dialer   net.Dialer
	// localAddrs lists this machine's addresses; tests replace it.
	localAddrs func() []netip.Addr
}

// New returns the policy c describes.
func New(c Config) *Policy {
	p := &Policy{allow: c.AllowHosts, ports: c.ConnectPorts, deny: c.Deny, rules: c.Rules, resolver: c.Resolver, localAddrs: interfaceAddrs}
	if p.ports == nil {
		p.ports = []int{443, 80}
	}
	if p.deny == nil {
		p.deny = DefaultDeny
	}
	if p.resolver == nil {
		p.resolver = net.DefaultResolver
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = 10 * time.Second
	}
	p.dialer = net.Dialer{Timeout: c.DialTimeout, KeepAlive: 30 * time.Second}
	for _, a := range c.SelfAddrs {
		if ap, err := netip.ParseAddrPort(a); err == nil && ap.Port() != 0 {
			p.self = append(p.self, netip.AddrPortFrom(normalizeAddr(ap.Addr()), ap.Port()))
		}
	}
	return p
}

// Kind is what a target is checked for.
type Kind int

const (
	// Request is a request sent to the target (plain HTTP, or inside an
	// intercepted tunnel): the allowlist applies to hosts no rule names.
	Request Kind = iota
	// Tunnel is a CONNECT tunnel to the target: the allowlist and the
	// CONNECT ports apply to hosts no rule names.
	Tunnel
)

func (k Kind) String() string {
	if k == Tunnel {
		return "tunnel"
	}
	return "request"
}

// Check refuses a target the policy forbids: hostport as the client named
// it, for a kind of connection. In order it refuses one of toolguard's own
// listeners named literally (an address in any spelling, or localhost;
// ErrSelf), a host no rule names that the allowlist does not hold
// (ErrHostNotAllowed) or, for a tunnel, on a port that is not a CONNECT
// port (ErrTunnelNotAllowed), and a host that is an address which Dial
// would refuse (ErrSelf, ErrDenied, ErrZone). It does no lookup: Dial
// checks a name's addresses when it resolves them. The error is an *Error.
func (p *Policy) Check(kind Kind, hostport string) error {
	host, port, _ := net.SplitHostPort(hostport)
	if p.isSelf(hostport) {
		return &Error{Host: hostport, Err: ErrSelf}
	}
	named := p.rules != nil && p.rules.Intercepts(hostport)
	switch {
	case named:
	case kind == Tunnel && !p.connectAllowed(hostport):
		return &Error{Host: hostport, Err: ErrTunnelNotAllowed}
	case kind == Request && !p.hostAllowed(hostport):
		return &Error{Host: hostport, Err: ErrHostNotAllowed}
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return nil // no port: nothing would be dialled
	}
	if ip, ok := parseHostAddr(host); ok {
		return p.checkAddr(host, netip.AddrPortFrom(ip, uint16(n)))
	}
	return nil
}

// checkAddr refuses an address toolguard must not connect to. It checks
// the normalised address, and refuses a zoned one that passes: a zone
// picks an interface, which no check here reasons about.
func (p *Policy) checkAddr(host string, ap netip.AddrPort) error {
	zone := ap.Addr().Zone()
	ap = netip.AddrPortFrom(normalizeAddr(ap.Addr()), ap.Port())
	if p.isSelfAddr(ap) {
		return &Error{Host: host, Addr: ap, Err: ErrSelf}
	}
	if d, ok := p.denied(ap.Addr()); ok {
		return &Error{Host: host, Addr: ap, Err: ErrDenied, detail: d.String()}
	}
	if zone != "" {
		return &Error{Host: host, Addr: ap, Err: ErrZone, detail: "%" + zone}
	}
	return nil
}

// interfaceAddrs lists the addresses of this machine's interfaces, read
// afresh: addresses come and go while the proxy runs.
func interfaceAddrs() []netip.Addr {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	out := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(ipn.IP); ok {
				out = append(out, ip.Unmap())
			}
		}
	}
	return out
}

// isSelf reports whether hostport names one of toolguard's own listeners
// literally (an address, or localhost). It answers before any lookup; the
// check that cannot be bypassed is checkAddr at dial time.
func (p *Policy) isSelf(hostport string) bool {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return p.isSelfAddr(netip.AddrPortFrom(netip.IPv6Loopback(), uint16(n))) ||
			p.isSelfAddr(netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(n)))
	}
	ip, ok := parseHostAddr(host)
	return ok && p.isSelfAddr(netip.AddrPortFrom(ip, uint16(n)))
}

// isSelfAddr reports whether dialling ap would reach one of toolguard's
// own listeners. A listener on an unspecified address listens on every
// local address; dialling an unspecified address (0.0.0.0/8, ::) reaches
// this machine, so it is a listener whenever the port is one's. The
// address is normalised first.
func (p *Policy) isSelfAddr(ap netip.AddrPort) bool {
	ip := normalizeAddr(ap.Addr())
	local := func() bool {
		return ip.IsLoopback() || isThisHost(ip) || slices.Contains(p.localAddrs(), ip)
	}
	for _, l := range p.self {
		if l.Port() != ap.Port() {
			continue
		}
		switch la := l.Addr(); {
		case la == ip, isThisHost(ip), la.IsLoopback() && ip.IsLoopback():
			return true
		case la.IsUnspecified() && local():
			return true
		}
	}
	return false
}

// loopbackV4 holds every IPv4 loopback address.
var loopbackV4 = netip.MustParsePrefix("127.0.0.0/8")

// denied returns the deny-list entry that holds ip (normalised first), if
// any. An address that stands for this machine (0.0.0.0/8, ::) is inside
// every entry that holds a loopback address or an address of this machine,
// besides the entries that name it.
func (p *Policy) denied(ip netip.Addr) (netip.Prefix, bool) {
	ip = normalizeAddr(ip)
	for _, d := range p.deny {
		if d.Contains(ip) {
			return d, true
		}
	}
	if !isThisHost(ip) {
		return netip.Prefix{}, false
	}
	local := p.localAddrs()
	for _, d := range p.deny {
		if d.Overlaps(loopbackV4) || d.Contains(netip.IPv6Loopback()) || slices.ContainsFunc(local, d.Contains) {
			return d, true
		}
	}
	return netip.Prefix{}, false
}

// hostAllowed reports whether a host no rule names may be reached.
func (p *Policy) hostAllowed(hostport string) bool {
	if len(p.allow) == 0 {
		return true
	}
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	host = strings.ToLower(host)
	for _, a := range p.allow {
		a = strings.ToLower(a)
		switch {
		case strings.HasPrefix(a, "*."):
			if strings.HasSuffix(host, a[1:]) {
				return true
			}
		case strings.Contains(a, ":") && !strings.HasPrefix(a, "["):
			if a == strings.ToLower(hostport) {
				return true
			}
		case a == host:
			return true
		}
	}
	return false
}

// connectAllowed reports whether a tunnel to a host no rule names may be
// opened.
func (p *Policy) connectAllowed(hostport string) bool {
	_, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	n, _ := strconv.Atoi(port)
	return slices.Contains(p.ports, n) && p.hostAllowed(hostport)
}
