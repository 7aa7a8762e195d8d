package proxy

import (
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// egress decides which targets the proxy may reach, so that it is never an
// open relay: hosts named in rules always; other hosts only when they are
// on the allowlist (when one is set), tunnels only to the allowed ports.
// Whatever the name, the address actually dialled is never one of
// toolguard's own listeners nor inside the deny list (see dial.go).
type egress struct {
	allow []string // host, host:port or *.suffix; empty allows every host
	ports []int    // CONNECT ports for hosts no rule names
	// self are toolguard's own listeners; an unspecified address (0.0.0.0,
	// ::) stands for every address of this machine.
	self []netip.AddrPort
	// deny are the destinations never dialled (egress.deny).
	deny []netip.Prefix
	// resolver turns names into the addresses that are checked and dialled.
	resolver Resolver
	// localAddrs lists this machine's addresses; tests replace it.
	localAddrs func() []netip.Addr
}

// DefaultEgressDeny is the deny list used when Options.EgressDeny is nil:
// the endpoints that hand out instance or workload credentials to whoever
// asks from the machine (docs/egress.md lists the sources):
//   - 169.254.169.254, fd00:ec2::254: the instance metadata service (AWS
//     EC2, and the same address on GCP, Azure, OpenStack, ...);
//     https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-data-retrieval.html
//   - 169.254.170.2: AWS ECS task metadata and task-role credentials;
//     https://docs.aws.amazon.com/AmazonECS/latest/developerguide/task-iam-roles.html
//   - 169.254.170.23, fd00:ec2::23: the EKS Pod Identity agent;
//     https://docs.aws.amazon.com/eks/latest/userguide/pod-id-agent-setup.html
//   - 100.100.100.200: the Alibaba Cloud ECS metadata service;
//     https://www.alibabacloud.com/help/en/ecs/user-guide/overview-of-ecs-instance-metadata
var DefaultEgressDeny = []netip.Prefix{
	netip.MustParsePrefix("169.254.169.254/32"),
	netip.MustParsePrefix("fd00:ec2::254/128"),
	netip.MustParsePrefix("169.254.170.2/32"),
	netip.MustParsePrefix("169.254.170.23/32"),
	netip.MustParsePrefix("fd00:ec2::23/128"),
	netip.MustParsePrefix("100.100.100.200/32"),
}

func newEgress(o Options) *egress {
	e := &egress{allow: o.AllowHosts, ports: o.ConnectPorts, deny: o.EgressDeny, resolver: o.Resolver, localAddrs: interfaceAddrs}
	if e.ports == nil {
		e.ports = []int{443, 80}
	}
	if e.deny == nil {
		e.deny = DefaultEgressDeny
	}
	if e.resolver == nil {
		e.resolver = net.DefaultResolver
	}
	for _, a := range o.SelfAddrs {
		if ap, err := netip.ParseAddrPort(a); err == nil && ap.Port() != 0 {
			e.self = append(e.self, netip.AddrPortFrom(normalizeAddr(ap.Addr()), ap.Port()))
		}
	}
	return e
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
// literally (an address, or localhost). It answers early, before any
// lookup; the check that cannot be bypassed is checkAddr at dial time.
func (e *egress) isSelf(hostport string) bool {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return e.isSelfAddr(netip.AddrPortFrom(netip.IPv6Loopback(), uint16(n))) ||
			e.isSelfAddr(netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(n)))
	}
	ip, ok := parseHostAddr(host)
	return ok && e.isSelfAddr(netip.AddrPortFrom(ip, uint16(n)))
}

// isSelfAddr reports whether dialling ap would reach one of toolguard's
// own listeners. A listener on an unspecified address listens on every
// local address; dialling an unspecified address (0.0.0.0/8, ::) reaches
// this machine, so it is a listener whenever the port is one's. The
// address is normalised first (see addr.go).
func (e *egress) isSelfAddr(ap netip.AddrPort) bool {
	ip := normalizeAddr(ap.Addr())
	local := func() bool {
		return ip.IsLoopback() || isThisHost(ip) || slices.Contains(e.localAddrs(), ip)
	}
	for _, l := range e.self {
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
func (e *egress) denied(ip netip.Addr) (netip.Prefix, bool) {
	ip = normalizeAddr(ip)
	for _, p := range e.deny {
		if p.Contains(ip) {
			return p, true
		}
	}
	if !isThisHost(ip) {
		return netip.Prefix{}, false
	}
	local := e.localAddrs()
	for _, p := range e.deny {
		if p.Overlaps(loopbackV4) || p.Contains(netip.IPv6Loopback()) || slices.ContainsFunc(local, p.Contains) {
			return p, true
		}
	}
	return netip.Prefix{}, false
}

// hostAllowed reports whether a host no rule names may be reached.
func (e *egress) hostAllowed(hostport string) bool {
	if len(e.allow) == 0 {
		return true
	}
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	host = strings.ToLower(host)
	for _, a := range e.allow {
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
func (e *egress) connectAllowed(hostport string) bool {
	_, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	n, _ := strconv.Atoi(port)
	return slices.Contains(e.ports, n) && e.hostAllowed(hostport)
}
