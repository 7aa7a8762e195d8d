package proxy

import (
	"net/http"

	"github.com/elazarl/goproxy"

	"github.com/toolguard/toolguard/internal/calltrace"
)

// Tracing (Options.Tracer) is package calltrace's: the spans, their
// names and attributes. The pipeline says when they start and end: the
// SERVER span of a request when the proxy takes it, its end where its
// decision line is written (logDecision, logRequest), a CLIENT span per
// upstream attempt (sendUpstream), and the INTERNAL spans of lookups and
// verification probes. With no Tracer every hook returns at once.

// tracePassthrough starts the span of a request passed through, "METHOD
// host". Its decision line is written by handleResponse from ctx.Req, so
// ctx.Req becomes the request carrying the span (goproxy reads nothing
// else of it that differs: the copy shares its fields).
func (s *Server) tracePassthrough(req *http.Request, ctx *goproxy.ProxyCtx) *http.Request {
	traced := s.trace.Passthrough(req)
	if traced != req {
		ctx.Req = traced
	}
	return traced
}

// sendUpstream sends out, an upstream attempt of a guarded call or a
// request passed through, in a CLIENT span child of the request's span.
func (s *Server) sendUpstream(out *http.Request) (*http.Response, error) {
	return s.trace.Send(s.upstream, out)
}

// traceDecision ends a guarded call's span with its decision (logDecision).
func (s *Server) traceDecision(c *call, a *answer) {
	d := calltrace.Decided{Outcome: a.outcome, Resp: a.resp, Decision: a.decision}
	if c.intent != nil {
		d.Key = c.intent.Key
	}
	s.trace.Decision(c.in.Context(), d)
}

// traceRequest ends the span of a request no route guards (logRequest):
// passed through, refused or tunnelled. An intercepted CONNECT gets none:
// each request inside is traced.
func (s *Server) traceRequest(req *http.Request, outcome string, status int) {
	switch outcome {
	case outcomeIntercepted:
		return
	case outcomeTunnel:
		outcome = OutcomePassthrough
	}
	s.trace.Request(req, outcome, status)
}
