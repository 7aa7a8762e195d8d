// Package upstream builds the HTTP transport that carries the proxy's
// calls to upstream APIs: certificate roots, keep-alive pools and
// timeouts, over a dial function it is given. It never chooses where to
// connect; the caller's dial (egress.Policy.Dial in the proxy) decides.
package upstream
