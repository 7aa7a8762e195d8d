package calltrace

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

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolguard/toolguard/egress"
	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/lifecycle"
	"github.com/toolguard/toolguard/mcp"
	"github.com/toolguard/toolguard/rules"
	"github.com/toolguard/toolguard/verifiers"
)

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

// Tracer starts and ends the spans of proxied calls. A nil *Tracer, or
// one of a nil trace.Tracer, traces nothing: every method returns at once.
type Tracer struct {
	t trace.Tracer
}

// New is a Tracer that starts its spans with t; nil traces nothing.
func New(t trace.Tracer) *Tracer { return &Tracer{t: t} }

// off reports whether t traces nothing.
func (t *Tracer) off() bool { return t == nil || t.t == nil }

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
	// requests' spans: those go out with the call's context (its
	// request's), which is not changed for the lookup, since another
	// goroutine may read that request (the proxy's guardMCPStreaming),
	// and an MCP lookup's session may send from goroutines of its own.
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
func (t *Tracer) startServer(req *http.Request, parent context.Context, name string, ct *callTrace, attrs ...attribute.KeyValue) *http.Request {
	ctx, span := t.t.Start(parent, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	ct.span = span
	return req.WithContext(context.WithValue(ctx, callTraceKey{}, ct))
}

// headerParent is req's context with the trace context of its headers.
func headerParent(req *http.Request) context.Context {
	return propagator.Extract(req.Context(), propagation.HeaderCarrier(req.Header))
}

// Route starts the span of a guarded REST call, "METHOD route", and
// returns req carrying it.
func (t *Tracer) Route(req *http.Request, r *rules.Route) *http.Request {
	if t.off() {
		return req
	}
	name := req.Method + " " + r.Name
	if strings.HasPrefix(r.Name, req.Method+" ") {
		name = r.Name // the unmatched policy's routes are named so already
	}
	attrs := append(httpAttrs(req), attrAPI.String(r.API.Name), attrRoute.String(r.Name), semconv.HTTPRoute(r.Pattern))
	ct := &callTrace{client: req.Method + " " + r.Pattern, attrs: []attribute.KeyValue{semconv.URLTemplate(r.Pattern)}}
	return t.startServer(req, headerParent(req), name, ct, attrs...)
}

// Tool starts the span of a guarded MCP tools/call, "tools/call
// {tool}", parented on the trace context in the message's params._meta,
// else on the request's headers, and returns in carrying it.
func (t *Tracer) Tool(in *http.Request, r *rules.Route, m mcp.Message, tc *mcp.Call) *http.Request {
	if t.off() {
		return in
	}
	tool := []attribute.KeyValue{
		attrMCPMethod.String(mcp.MethodCallTool), attrGenAIOp.String("execute_tool"), attrGenAITool.String(tc.Name),
		semconv.JSONRPCRequestID(rpcID(tc.ID)),
	}
	attrs := append(httpAttrs(in), attrAPI.String(r.API.Name), attrRoute.String(r.Name), semconv.NetworkTransportTCP)
	name := mcp.MethodCallTool + " " + tc.Name
	ct := &callTrace{tool: true, client: name, attrs: tool}
	return t.startServer(in, metaParent(in, m.Params), name, ct, append(attrs, tool...)...)
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

// Passthrough starts the span of a request passed through, "METHOD
// host", and returns req carrying it.
func (t *Tracer) Passthrough(req *http.Request) *http.Request {
	if t.off() {
		return req
	}
	return t.startServer(req, headerParent(req), req.Method+" "+hostOf(req), &callTrace{client: req.Method}, httpAttrs(req)...)
}

// Attempt records which attempt of the guarded call of ctx is about to
// be sent.
func (t *Tracer) Attempt(ctx context.Context, attempt int) {
	if t.off() {
		return
	}
	if ct := traceOf(ctx); ct != nil {
		ct.resends = max(attempt-1, 0)
	}
}

// Send sends out through rt: an upstream attempt of a guarded call or a
// request passed through, in a CLIENT span child of the request's span;
// out carries the span's trace context in traceparent.
func (t *Tracer) Send(rt http.RoundTripper, out *http.Request) (*http.Response, error) {
	if t.off() {
		return rt.RoundTrip(out)
	}
	ct := traceOf(out.Context())
	if ct == nil {
		return rt.RoundTrip(out)
	}
	attrs := ct.attrs
	if ct.resends > 0 {
		attrs = append(attrs[:len(attrs):len(attrs)], semconv.HTTPRequestResendCount(ct.resends))
	}
	return t.clientTrip(rt, out, ct.client, attrs)
}

// clientTrip sends out through rt in a CLIENT span named name.
func (t *Tracer) clientTrip(rt http.RoundTripper, out *http.Request, name string, attrs []attribute.KeyValue) (*http.Response, error) {
	ctx, span := t.t.Start(out.Context(), name, trace.WithSpanKind(trace.SpanKindClient),
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

// Transport is rt sending the requests of lookups, checks and
// verification probes in CLIENT spans named for their method, carrying
// their trace context; rt itself when t traces nothing.
func (t *Tracer) Transport(rt http.RoundTripper) http.RoundTripper {
	if t.off() {
		return rt
	}
	return tracedTransport{t, rt}
}

// tracedTransport is Tracer.Transport's.
type tracedTransport struct {
	t  *Tracer
	rt http.RoundTripper
}

func (t tracedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx := r.Context()
	if ct := traceOf(ctx); ct != nil {
		if l := ct.lookup.Load(); l != nil {
			ctx = trace.ContextWithSpan(ctx, l.span)
		}
	}
	r = r.Clone(ctx) // a RoundTripper leaves its request alone
	return t.t.clientTrip(t.rt, r, r.Method, nil)
}

// Step records the state of the step of the call of ctx as the pipeline
// last read or wrote it.
func (t *Tracer) Step(ctx context.Context, st *journal.Step) {
	if t.off() {
		return
	}
	ct := traceOf(ctx)
	if ct == nil || st.Key == "" {
		return
	}
	ct.span.SetAttributes(attrStepKey.String(st.Key), attrStepStatus.String(st.Status.String()))
	if st.Held() {
		ct.span.SetAttributes(attrHold.String(st.Hold.String()), attrHoldReason.String(st.HoldReason))
	}
}

// Decided is what a guarded call's span ends with: the answer's outcome
// (Toolguard-Outcome) and response, the recovery table's decision and
// the step's key ("" when none was derived).
type Decided struct {
	Outcome  string
	Resp     *http.Response
	Decision lifecycle.Decision
	Key      string
}

// Decision ends the span of the guarded call of ctx with its decision.
func (t *Tracer) Decision(ctx context.Context, d Decided) {
	if t.off() {
		return
	}
	ct := traceOf(ctx)
	if ct == nil {
		return
	}
	span := ct.span
	defer span.End()
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attrOutcome.String(d.Outcome), semconv.HTTPResponseStatusCode(d.Resp.StatusCode))
	if a := d.Decision.Action.String(); a != "" {
		span.SetAttributes(attrDecision.String(a))
	}
	if d.Decision.Reason != "" {
		span.SetAttributes(attrReason.String(d.Decision.Reason))
	}
	if d.Key != "" {
		span.SetAttributes(attrStepKey.String(d.Key))
	}
	if ct.tool {
		toolStatus(span, d.Resp)
		return
	}
	serverStatus(span, d.Resp.StatusCode)
}

// Request ends the span of a request no route guards: passed through,
// refused or tunnelled (outcome is what the span records). One without a
// span (a refusal, a CONNECT) gets one, ended at once.
func (t *Tracer) Request(req *http.Request, outcome string, status int) {
	if t.off() {
		return
	}
	ct := traceOf(req.Context())
	if ct == nil {
		req = t.startServer(req, headerParent(req), req.Method+" "+hostOf(req), &callTrace{}, httpAttrs(req)...)
		ct = traceOf(req.Context())
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

// Lookup starts the INTERNAL span of a lookup of the step key of route's
// call of ctx, the parent of its requests' spans until the returned
// function records the answer and ends it.
func (t *Tracer) Lookup(ctx context.Context, route *rules.Route, key string) (end func(lifecycle.LookupAnswer)) {
	if t.off() {
		return func(lifecycle.LookupAnswer) {}
	}
	ct := traceOf(ctx)
	if ct == nil {
		return func(lifecycle.LookupAnswer) {}
	}
	_, span := t.t.Start(ctx, "lookup "+route.Name, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attrAPI.String(route.API.Name), attrRoute.String(route.Name), attrStepKey.String(key)))
	ct.lookup.Store(&spanRef{span})
	return func(answer lifecycle.LookupAnswer) {
		ct.lookup.Store(nil)
		span.SetAttributes(attrLookup.String(answer.String()))
		span.End()
	}
}

// Probe starts the INTERNAL span of one verification probe of the step
// key of route; the returned function records the answer and ends it.
func (t *Tracer) Probe(ctx context.Context, route *rules.Route, key string) (context.Context, func(verifiers.Result)) {
	if t.off() {
		return ctx, func(verifiers.Result) {}
	}
	ctx, span := t.t.Start(ctx, "verify "+route.Name, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attrAPI.String(route.API.Name), attrRoute.String(route.Name), attrStepKey.String(key)))
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
