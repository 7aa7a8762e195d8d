package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/elazarl/goproxy"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolguard/toolguard/egress"
	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/mcp"
	"github.com/toolguard/toolguard/rules"
	"github.com/toolguard/toolguard/verifiers"
)

// Tracing (Options.Tracer). Every guarded or passed-through request is one
// SERVER span, continuing the caller's W3C traceparent: started when the
// proxy takes the request, and ended where its decision line is written
// (logDecision, logRequest) with the decision's attributes. An MCP
// tools/call is a SERVER span of its own, named for its tool and parented
// on the trace context of the message's params._meta, as the MCP semantic
// conventions say. Each upstream attempt is a CLIENT span, child of the
// call's, whose context goes upstream in traceparent; a replay makes none.
// Lookups and verification probes are INTERNAL spans over the CLIENT spans
// of their requests. A refusal, or a tunnel, is a SERVER span ended at
// once.
//
// Attributes carry rule names (api, route, tool), fixed words (outcome,
// decision, status, hold), the step key (a keyed hash), the method, the
// status code and the target host; never a credential, a header value, a
// body or key-field value, a path, a query or the workflow id.
//
// With no Tracer every hook returns at once: tracing costs nothing.

// Span attributes of toolguard's own.
const (
	attrAPI        = attribute.Key("toolguard.api")
	attrRoute      = attribute.Key("toolguard.route")
	attrOutcome    = attribute.Key("toolguard.outcome")
	attrDecision   = attribute.Key("toolguard.decision")
	attrReason     = attribute.Key("toolguard.reason")
	attrStepKey    = attribute.Key("toolguard.step.key")
	attrStepStatus = attribute.Key("toolguard.step.status")
	attrHold       = attribute.Key("toolguard.hold")
	attrHoldReason = attribute.Key("toolguard.hold.reason")
	attrLookup     = attribute.Key("toolguard.lookup.answer")
	attrVerify     = attribute.Key("toolguard.verify.answer")
)

// Attributes of the MCP and GenAI semantic conventions (development
// status, not in the SDK's semconv package yet).
const (
	attrMCPMethod   = attribute.Key("mcp.method.name")
	attrGenAIOp     = attribute.Key("gen_ai.operation.name")
	attrGenAITool   = attribute.Key("gen_ai.tool.name")
	attrRPCResponse = attribute.Key("rpc.response.status_code")
)

// propagator reads and writes W3C traceparent and tracestate.
var propagator = propagation.TraceContext{}

// callTrace is the tracing state of one request, kept in its context: its
// SERVER span, and how to name the CLIENT spans of its upstream attempts.
// Only the request's goroutine uses it, but for lookup.
type callTrace struct {
	span trace.Span
	// tool: an MCP tools/call, whose error.type its result says.
	tool bool
	// client names the CLIENT span of an attempt, with attrs.
	client string
	attrs  []attribute.KeyValue
	// resends is the attempt being sent, less one (http.request.resend_count).
	resends int
	// lookup is the span of the lookup under way, the parent of its
	// requests' spans: those go out with the call's context (c.in's),
	// which is not changed for the lookup, since another goroutine may
	// read c.in (guardMCPStreaming), and an MCP lookup's session may send
	// from goroutines of its own.
	lookup atomic.Pointer[spanRef]
}

type spanRef struct{ span trace.Span }

type callTraceKey struct{}

// traceOf is the tracing state of a request; nil when it has none.
func traceOf(ctx context.Context) *callTrace {
	ct, _ := ctx.Value(callTraceKey{}).(*callTrace)
	return ct
}

// startServer starts req's SERVER span as a child of parent, and returns req
// carrying it.
func (s *Server) startServer(req *http.Request, parent context.Context, name string, ct *callTrace, attrs ...attribute.KeyValue) *http.Request {
	ctx, span := s.opts.Tracer.Start(parent, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	ct.span = span
	return req.WithContext(context.WithValue(ctx, callTraceKey{}, ct))
}

// headerParent is req's context with the trace context of its headers.
func headerParent(req *http.Request) context.Context {
	return propagator.Extract(req.Context(), propagation.HeaderCarrier(req.Header))
}

// traceRoute starts the span of a guarded REST call: "METHOD route".
func (s *Server) traceRoute(req *http.Request, r *rules.Route) *http.Request {
	if s.opts.Tracer == nil {
		return req
	}
	name := req.Method + " " + r.Name
	if strings.HasPrefix(r.Name, req.Method+" ") {
		name = r.Name // the unmatched policy's routes are named so already
	}
	attrs := append(httpAttrs(req), attrAPI.String(r.API.Name), attrRoute.String(r.Name), semconv.HTTPRoute(r.Pattern))
	ct := &callTrace{client: req.Method + " " + r.Pattern, attrs: []attribute.KeyValue{semconv.URLTemplate(r.Pattern)}}
	return s.startServer(req, headerParent(req), name, ct, attrs...)
}

// traceTool starts the span of a guarded MCP tools/call, "tools/call
// {tool}", parented on the trace context in the message's params._meta,
// else on the request's headers.
func (s *Server) traceTool(in *http.Request, r *rules.Route, m mcp.Message, tc *mcp.Call) *http.Request {
	if s.opts.Tracer == nil {
		return in
	}
	tool := []attribute.KeyValue{
		attrMCPMethod.String(mcp.MethodCallTool), attrGenAIOp.String("execute_tool"), attrGenAITool.String(tc.Name),
		semconv.JSONRPCRequestID(rpcID(tc.ID)),
	}
	attrs := append(httpAttrs(in), attrAPI.String(r.API.Name), attrRoute.String(r.Name), semconv.NetworkTransportTCP)
	name := mcp.MethodCallTool + " " + tc.Name
	ct := &callTrace{tool: true, client: name, attrs: tool}
	return s.startServer(in, metaParent(in, m.Params), name, ct, append(attrs, tool...)...)
}

// metaParent is in's context with the trace context of params._meta
// (traceparent, tracestate), or of in's headers when _meta has none.
func metaParent(in *http.Request, params json.RawMessage) context.Context {
	var p struct {
		Meta map[string]any `json:"_meta"`
	}
	if json.Unmarshal(params, &p) == nil {
		if tp, ok := p.Meta["traceparent"].(string); ok && tp != "" {
			carrier := propagation.MapCarrier{"traceparent": tp}
			if ts, ok := p.Meta["tracestate"].(string); ok {
				carrier["tracestate"] = ts
			}
			return propagator.Extract(in.Context(), carrier)
		}
	}
	return headerParent(in)
}

// rpcID is a JSON-RPC id as text: a string's value, a number as written.
func rpcID(id json.RawMessage) string {
	var s string
	if json.Unmarshal(id, &s) == nil {
		return s
	}
	return string(bytes.TrimSpace(id))
}

// tracePassthrough starts the span of a request passed through, "METHOD
// host". Its decision line is written by handleResponse from ctx.Req, so
// ctx.Req becomes the request carrying the span (goproxy reads nothing
// else of it that differs: the copy shares its fields).
func (s *Server) tracePassthrough(req *http.Request, ctx *goproxy.ProxyCtx) *http.Request {
	if s.opts.Tracer == nil {
		return req
	}
	req = s.startServer(req, headerParent(req), req.Method+" "+hostOf(req), &callTrace{client: req.Method}, httpAttrs(req)...)
	ctx.Req = req
	return req
}

// traceAttempt records which attempt of a guarded call is about to be sent.
func (s *Server) traceAttempt(c *call, attempt int) {
	if s.opts.Tracer == nil {
		return
	}
	if ct := traceOf(c.in.Context()); ct != nil {
		ct.resends = max(attempt-1, 0)
	}
}

// sendUpstream sends out, an upstream attempt of a guarded call or a
// request passed through, in a CLIENT span child of the request's span;
// out carries the span's trace context in traceparent.
func (s *Server) sendUpstream(out *http.Request) (*http.Response, error) {
	if s.opts.Tracer == nil {
		return s.upstream.RoundTrip(out)
	}
	ct := traceOf(out.Context())
	if ct == nil {
		return s.upstream.RoundTrip(out)
	}
	attrs := ct.attrs
	if ct.resends > 0 {
		attrs = append(attrs[:len(attrs):len(attrs)], semconv.HTTPRequestResendCount(ct.resends))
	}
	return s.clientTrip(s.upstream, out, ct.client, attrs)
}

// clientTrip sends out through rt in a CLIENT span named name.
func (s *Server) clientTrip(rt http.RoundTripper, out *http.Request, name string, attrs []attribute.KeyValue) (*http.Response, error) {
	ctx, span := s.opts.Tracer.Start(out.Context(), name, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(append(httpAttrs(out), attrs...)...))
	defer span.End()
	propagator.Inject(ctx, propagation.HeaderCarrier(out.Header))
	resp, err := rt.RoundTrip(out)
	switch {
	case err != nil:
		// Never the error's text: a url.Error names the URL, query included.
		span.SetAttributes(semconv.ErrorTypeKey.String(errorType(err)))
		span.SetStatus(codes.Error, "")
	default:
		span.SetAttributes(semconv.HTTPResponseStatusCode(resp.StatusCode))
		if resp.StatusCode >= 400 {
			span.SetAttributes(semconv.ErrorTypeKey.String(strconv.Itoa(resp.StatusCode)))
			span.SetStatus(codes.Error, "")
		}
	}
	return resp, err
}

// errorType classifies a failed send for error.type.
func errorType(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, egress.ErrRefused):
		return "egress_refused"
	}
	return semconv.ErrorTypeOther.Value.AsString()
}

// tracedTransport sends the requests of lookups, checks and verification
// probes in CLIENT spans named for their method, carrying their trace
// context.
type tracedTransport struct {
	s  *Server
	rt http.RoundTripper
}

func (t tracedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.s.opts.Tracer == nil {
		return t.rt.RoundTrip(r)
	}
	ctx := r.Context()
	if ct := traceOf(ctx); ct != nil {
		if l := ct.lookup.Load(); l != nil {
			ctx = trace.ContextWithSpan(ctx, l.span)
		}
	}
	r = r.Clone(ctx) // a RoundTripper leaves its request alone
	return t.s.clientTrip(t.rt, r, r.Method, nil)
}

// traceStep records the state of the call's step as the pipeline last
// read or wrote it.
func (s *Server) traceStep(c *call, st *journal.Step) {
	if s.opts.Tracer == nil {
		return
	}
	ct := traceOf(c.in.Context())
	if ct == nil || st.Key == "" {
		return
	}
	ct.span.SetAttributes(attrStepKey.String(st.Key), attrStepStatus.String(st.Status.String()))
	if st.Held() {
		ct.span.SetAttributes(attrHold.String(st.Hold.String()), attrHoldReason.String(st.HoldReason))
	}
}

// traceDecision ends a guarded call's span with its decision (logDecision).
func (s *Server) traceDecision(c *call, a *answer) {
	if s.opts.Tracer == nil {
		return
	}
	ct := traceOf(c.in.Context())
	if ct == nil {
		return
	}
	span := ct.span
	defer span.End()
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attrOutcome.String(a.outcome), semconv.HTTPResponseStatusCode(a.resp.StatusCode))
	if d := a.decision.Action.String(); d != "" {
		span.SetAttributes(attrDecision.String(d))
	}
	if a.decision.Reason != "" {
		span.SetAttributes(attrReason.String(a.decision.Reason))
	}
	if c.intent != nil {
		span.SetAttributes(attrStepKey.String(c.intent.Key))
	}
	if ct.tool {
		toolStatus(span, a.resp)
		return
	}
	serverStatus(span, a.resp.StatusCode)
}

// traceRequest ends the span of a request no route guards (logRequest):
// passed through, refused or tunnelled. One without a span (a refusal, a
// CONNECT) gets one, ended at once; an intercepted CONNECT gets none: each
// request inside is traced.
func (s *Server) traceRequest(req *http.Request, outcome string, status int) {
	if s.opts.Tracer == nil || outcome == outcomeIntercepted {
		return
	}
	ct := traceOf(req.Context())
	if ct == nil {
		req = s.startServer(req, headerParent(req), req.Method+" "+hostOf(req), &callTrace{}, httpAttrs(req)...)
		ct = traceOf(req.Context())
	}
	if outcome == outcomeTunnel {
		outcome = OutcomePassthrough
	}
	ct.span.SetAttributes(attrOutcome.String(outcome), semconv.HTTPResponseStatusCode(status))
	serverStatus(ct.span, status)
	ct.span.End()
}

// serverStatus marks a server span failed on a 5xx, as the HTTP semantic
// conventions say: a 4xx is the caller's, and a hold is not a failure.
func serverStatus(span trace.Span, status int) {
	if status >= 500 {
		span.SetAttributes(semconv.ErrorTypeKey.String(strconv.Itoa(status)))
		span.SetStatus(codes.Error, "")
	}
}

// toolStatus sets error.type from an MCP answer: tool_error for a result
// with isError (a hold included), the code of a JSON-RPC error. The answer
// is in memory (bodyResponse); its body is read and put back.
func toolStatus(span trace.Span, resp *http.Response) {
	if resp.Body == nil || resp.ContentLength < 0 {
		return
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return
	}
	ans, err := mcp.ParseResponse(body)
	switch {
	case err != nil:
	case ans.Error != nil:
		code := strconv.Itoa(ans.Error.Code)
		span.SetAttributes(semconv.ErrorTypeKey.String(code), attrRPCResponse.String(code))
		span.SetStatus(codes.Error, "")
	case ans.Classify() == mcp.OutcomeToolError:
		span.SetAttributes(semconv.ErrorTypeKey.String("tool_error"))
		span.SetStatus(codes.Error, "")
	}
}

// traceLookup starts the INTERNAL span of a lookup of st, the parent of
// its requests' spans until the returned function records the answer and
// ends it.
func (s *Server) traceLookup(c *call, st *journal.Step) (end func()) {
	if s.opts.Tracer == nil {
		return func() {}
	}
	ct := traceOf(c.in.Context())
	if ct == nil {
		return func() {}
	}
	_, span := s.opts.Tracer.Start(c.in.Context(), "lookup "+c.route.Name, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attrAPI.String(c.route.API.Name), attrRoute.String(c.route.Name), attrStepKey.String(st.Key)))
	ct.lookup.Store(&spanRef{span})
	return func() {
		ct.lookup.Store(nil)
		span.SetAttributes(attrLookup.String(c.lookup.String()))
		span.End()
	}
}

// traceProbe starts the INTERNAL span of one verification probe of v;
// the returned function records the answer and ends it.
func (s *Server) traceProbe(ctx context.Context, v verification) (context.Context, func(verifiers.Result)) {
	if s.opts.Tracer == nil {
		return ctx, func(verifiers.Result) {}
	}
	ctx, span := s.opts.Tracer.Start(ctx, "verify "+v.route.Name, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attrAPI.String(v.route.API.Name), attrRoute.String(v.route.Name), attrStepKey.String(v.step.Key)))
	return ctx, func(r verifiers.Result) {
		span.SetAttributes(attrVerify.String(r.Answer.String()))
		span.End()
	}
}

// httpAttrs are a request's method and target: scheme, host and port,
// never its path or query.
func httpAttrs(req *http.Request) []attribute.KeyValue {
	u := req.URL
	attrs := []attribute.KeyValue{semconv.ServerAddress(hostOf(req)), semconv.HTTPRequestMethodKey.String(req.Method)}
	if u.Scheme != "" {
		attrs = append(attrs, semconv.URLScheme(u.Scheme))
	}
	if p, err := strconv.Atoi(u.Port()); err == nil {
		attrs = append(attrs, semconv.ServerPort(p))
	} else if port := map[string]int{"http": 80, "https": 443}[u.Scheme]; port != 0 {
		attrs = append(attrs, semconv.ServerPort(port))
	}
	return attrs
}

// hostOf is the host a request is for: its URL's, else its Host header's
// (a request to the proxy listener itself).
func hostOf(req *http.Request) string {
	if h := req.URL.Hostname(); h != "" {
		return h
	}
	if h, _, err := net.SplitHostPort(req.Host); err == nil {
		return h
	}
	return req.Host
}
