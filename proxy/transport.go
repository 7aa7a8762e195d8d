package proxy

import "github.com/toolguard/toolguard/internal/upstream"

// TransportOptions tune the transport of upstream calls (see
// upstream.Options). They cannot replace its dialer: every upstream
// connection is opened by the egress policy's Dial (see New).
type TransportOptions = upstream.Options
