package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"time"
)

// Dial-time egress checks.
//
// Every upstream connection — plain HTTP, intercepted HTTPS, tunnels,
// lookups and verifications — is opened by egress.dial: the target name is
// resolved once, every address it resolves to is checked, and only checked
// addresses are dialled, by address. So the address checked is the address
// connected to: a name that resolves to a listener of toolguard (or to a
// denied range) is refused whatever it is called, and DNS rebinding
// between a check and the dial is impossible, because there is no second
// lookup. A name with any refused address is refused as a whole.

// Resolver looks names up; *net.Resolver is one. Tests pass their own.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// dialFunc is the shape of http.Transport.DialContext.
type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// ErrEgressRefused is wrapped by the errors of dials the egress checks
// refused (see EgressDial).
var ErrEgressRefused = errors.New("egress refused")

// egressError is a dial toolguard refused: the address is one of its own
// listeners or inside egress.deny. Nothing was sent.
type egressError struct {
	host string // as the caller named it
	addr netip.AddrPort
	why  string
}

func (e *egressError) Error() string {
	if e.host == e.addr.Addr().String() {
		return fmt.Sprintf("refused to connect to %s: %s", e.addr, e.why)
	}
	return fmt.Sprintf("refused to connect to %s (%s): %s", e.host, e.addr, e.why)
}

// Unwrap makes errors.Is(err, ErrEgressRefused) true.
func (e *egressError) Unwrap() error { return ErrEgressRefused }

// EgressDial connects as the proxy's upstream connections do, through the
// dial-time egress checks: never to one of toolguard's own listeners nor
// into egress.deny, whatever the name resolves to. A refusal wraps
// ErrEgressRefused. Components that call out on the operator's behalf
// (hold notifications) dial with it.
func (s *Server) EgressDial(ctx context.Context, network, addr string) (net.Conn, error) {
	return s.egress.dial(newDialer().DialContext)(ctx, network, addr)
}

// refusal returns the egress refusal err holds, or nil.
func refusal(err error) *egressError {
	var e *egressError
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// checkAddr refuses an address toolguard must not connect to. It checks
// the normalised address (see addr.go), and refuses a zoned one that
// passes: a zone picks an interface, which no check here reasons about.
func (e *egress) checkAddr(host string, ap netip.AddrPort) error {
	zone := ap.Addr().Zone()
	ap = netip.AddrPortFrom(normalizeAddr(ap.Addr()), ap.Port())
	if e.isSelfAddr(ap) {
		return &egressError{host: host, addr: ap, why: "toolguard does not proxy requests to its own listeners"}
	}
	if p, ok := e.denied(ap.Addr()); ok {
		return &egressError{host: host, addr: ap, why: "the address is in egress.deny (" + p.String() + ")"}
	}
	if zone != "" {
		return &egressError{host: host, addr: ap, why: "toolguard does not connect to addresses with an IPv6 zone (%" + zone + ")"}
	}
	return nil
}

// dial wraps inner so that it connects only to checked addresses.
func (e *egress) dial(inner dialFunc) dialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, &net.OpError{Op: "dial", Net: network, Err: err}
		}
		n, err := strconv.ParseUint(port, 10, 16)
		if err != nil {
			return nil, &net.OpError{Op: "dial", Net: network, Err: fmt.Errorf("invalid port %q", port)}
		}
		ips, err := e.resolve(ctx, network, host)
		if err != nil {
			return nil, &net.OpError{Op: "dial", Net: network, Err: err}
		}
		targets := make([]netip.AddrPort, len(ips))
		for i, ip := range ips {
			if err := e.checkAddr(host, netip.AddrPortFrom(ip, uint16(n))); err != nil {
				return nil, err
			}
			targets[i] = netip.AddrPortFrom(normalizeAddr(ip), uint16(n)) // the address checked

		}
		var first error
		for _, t := range targets {
			c, err := inner(ctx, network, t.String())
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
}

// resolve returns the addresses of host: itself when it is an address in
// any spelling (parseHostAddr), so that what the address means does not
// depend on which resolver Go picked. Callers normalise.
func (e *egress) resolve(ctx context.Context, network, host string) ([]netip.Addr, error) {
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
	ips, err := e.resolver.LookupNetIP(ctx, ipNet, host)
	if err != nil {
		return nil, err
	}
	if len(ips) == 0 {
		return nil, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
	}
	return ips, nil
}

// newDialer is the dialer upstream connections use beneath egress.dial.
func newDialer() *net.Dialer {
	return &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
}
