package proxy

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"testing"

	"github.com/toolguard/toolguard/egress"
)

// TestEgressDial: the dialer other components call out with (hold
// notifications) refuses toolguard's own listeners and egress.deny, by
// address and by name, with an error wrapping egress.ErrRefused, and
// connects elsewhere.
func TestEgressDial(t *testing.T) {
	admin := newCounter(t, "tcp4", "127.0.0.1:0") // stands in for the admin API
	other := newCounter(t, "tcp4", "127.0.0.1:0") // a webhook receiver
	adminPort, otherPort := strconv.Itoa(admin.port()), strconv.Itoa(other.port())
	p := startNetProxy(t, Options{
		SelfAddrs:  []string{admin.ln.Addr().String()},
		EgressDeny: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")},
		Resolver: fakeResolver{
			"admin.test":  {netip.MustParseAddr("127.0.0.1")},
			"denied.test": {netip.MustParseAddr("127.0.0.2")},
		},
	}, "", false)
	tests := []struct {
		name    string
		addr    string
		refused bool
	}{
		{name: "admin listener", addr: "127.0.0.1:" + adminPort, refused: true},
		{name: "admin listener by name", addr: "admin.test:" + adminPort, refused: true},
		{name: "admin listener as mapped IPv6", addr: "[::ffff:127.0.0.1]:" + adminPort, refused: true},
		{name: "denied CIDR", addr: "127.0.0.2:443", refused: true},
		{name: "denied CIDR by name", addr: "denied.test:443", refused: true},
		{name: "another listener", addr: "127.0.0.1:" + otherPort},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := p.srv.EgressDial(context.Background(), "tcp", tc.addr)
			if c != nil {
				c.Close()
			}
			if got := errors.Is(err, egress.ErrRefused); got != tc.refused {
				t.Errorf("EgressDial(%s) = %v; refused %v, want %v", tc.addr, err, got, tc.refused)
			}
			if !tc.refused && err != nil {
				t.Errorf("EgressDial(%s) = %v", tc.addr, err)
			}
		})
	}
	var _ func(context.Context, string, string) (net.Conn, error) = p.srv.EgressDial
}
