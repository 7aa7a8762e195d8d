package proxy

import (
	"context"
	"net"
)

// EgressDial connects as the proxy's upstream connections do, through the
// egress policy: never to one of toolguard's own listeners nor into
// egress.deny, whatever the name resolves to. A refusal wraps
// egress.ErrRefused. Components that call out on the operator's behalf
// (hold notifications) dial with it.
func (s *Server) EgressDial(ctx context.Context, network, addr string) (net.Conn, error) {
	return s.egress.Dial(ctx, network, addr)
}
