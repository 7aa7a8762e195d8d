package egress

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
)

// Dial connects to addr (host:port) as net.Dialer.DialContext does, but
// only to checked addresses: host is resolved once (an address in any
// spelling is itself), every address is checked (ErrSelf, ErrDenied,
// ErrZone), and the normalised addresses are dialled in turn, by address.
// So the address checked is the address connected to, and a name with any
// refused address is refused as a whole, before anything is dialled. A
// refusal is an *Error; other errors are *net.OpError or the dialer's.
// Dial is the DialContext of every upstream connection toolguard opens.
func (p *Policy) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	targets, err := p.targets(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	var first error
	for _, t := range targets {
		c, err := p.dialer.DialContext(ctx, network, t.String())
		if err == nil {
			return c, nil
		}
		if first == nil {
			first = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, first
}

// targets resolves addr and checks every address, returning the
// normalised addresses to dial.
func (p *Policy) targets(ctx context.Context, network, addr string) ([]netip.AddrPort, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: network, Err: err}
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: network, Err: fmt.Errorf("invalid port %q", port)}
	}
	ips, err := p.resolve(ctx, network, host)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: network, Err: err}
	}
	targets := make([]netip.AddrPort, len(ips))
	for i, ip := range ips {
		if err := p.checkAddr(host, netip.AddrPortFrom(ip, uint16(n))); err != nil {
			return nil, err
		}
		targets[i] = netip.AddrPortFrom(normalizeAddr(ip), uint16(n)) // the address checked
	}
	return targets, nil
}

// resolve returns the addresses of host: itself when it is an address in
// any spelling (parseHostAddr), so that what the address means does not
// depend on which resolver Go picked. Callers normalise.
func (p *Policy) resolve(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if ip, ok := parseHostAddr(host); ok {
		return []netip.Addr{ip}, nil
	}
	ipNet := "ip"
	switch network {
	case "tcp4":
		ipNet = "ip4"
	case "tcp6":
		ipNet = "ip6"
	}
	ips, err := p.resolver.LookupNetIP(ctx, ipNet, host)
	if err != nil {
		return nil, err
	}
	if len(ips) == 0 {
		return nil, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
	}
	return ips, nil
}
