package calltrace

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolguard/toolguard/egress"
	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/lifecycle"
	"github.com/toolguard/toolguard/mcp"
	"github.com/toolguard/toolguard/rules"
	"github.com/toolguard/toolguard/verifiers"
)

// recorder is a Tracer whose spans end up in an in-memory exporter.
func recorder() (*Tracer, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	return New(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)).Tracer("test")), exp
}

// span is the one span named name, with its attributes as text.
func span(t *testing.T, exp *tracetest.InMemoryExporter, name string) (tracetest.SpanStub, map[string]string) {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans named %q, want 1", len(found), name)
	}
	attrs := map[string]string{}
	for _, kv := range found[0].Attributes {
		attrs[string(kv.Key)] = kv.Value.String()
	}
	return found[0], attrs
}

func want(t *testing.T, attrs map[string]string, w map[string]string) {
	t.Helper()
	for k, v := range w {
		if attrs[k] != v {
			t.Errorf("%s = %q, want %q", k, attrs[k], v)
		}
	}
}

func route() *rules.Route {
	api := &rules.API{Name: "stripe"}
	return &rules.Route{API: api, Name: "charge", Pattern: "/v1/charges"}
}

// TestGuardedCall: a guarded call's SERVER span continues the caller's
// traceparent, its attempt is a CLIENT span whose context goes upstream,
// and the decision ends it.
func TestGuardedCall(t *testing.T) {
	tr, exp := recorder()
	var upstreamParent string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		upstreamParent = r.Header.Get("traceparent")
		w.WriteHeader(http.StatusBadGateway)
	}))
	defer up.Close()
	req := httptest.NewRequest(http.MethodPost, up.URL+"/v1/charges?secret=1", nil)
	req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	req = tr.Route(req, route())
	tr.Attempt(req.Context(), 2)
	out, _ := http.NewRequestWithContext(req.Context(), http.MethodPost, up.URL+"/v1/charges", nil)
	resp, err := tr.Send(http.DefaultTransport, out)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	tr.Step(req.Context(), &journal.Step{Key: "k1", Status: journal.StatusStarted, Hold: journal.HoldNeedsReview, HoldReason: "outcome_unknown"})
	tr.Decision(req.Context(), Decided{Outcome: "blocked", Resp: &http.Response{StatusCode: 503},
		Decision: lifecycle.Decision{Action: lifecycle.ActionHold, Reason: "outcome_unknown"}, Key: "k1"})

	srv, attrs := span(t, exp, "POST charge")
	if srv.SpanKind != trace.SpanKindServer || srv.Parent.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("server span %v, parent %v", srv.SpanKind, srv.Parent)
	}
	want(t, attrs, map[string]string{"toolguard.api": "stripe", "toolguard.route": "charge", "toolguard.outcome": "blocked",
		"toolguard.decision": "hold", "toolguard.reason": "outcome_unknown", "toolguard.step.key": "k1",
		"toolguard.hold": "needs_review", "http.response.status_code": "503", "error.type": "503"})
	cl, cattrs := span(t, exp, "POST /v1/charges")
	if cl.SpanKind != trace.SpanKindClient || cl.Parent.SpanID() != srv.SpanContext.SpanID() {
		t.Errorf("client span %v, parent %v", cl.SpanKind, cl.Parent)
	}
	want(t, cattrs, map[string]string{"http.request.resend_count": "1", "url.template": "/v1/charges", "error.type": "502"})
	if upstreamParent == "" || !bytes.Contains([]byte(upstreamParent), []byte(cl.SpanContext.SpanID().String())) {
		t.Errorf("traceparent upstream %q, want the client span's", upstreamParent)
	}
	for _, s := range exp.GetSpans() {
		for _, kv := range s.Attributes {
			if bytes.Contains([]byte(kv.Value.String()), []byte("secret")) {
				t.Errorf("%s carries the query: %s", s.Name, kv.Key)
			}
		}
	}
}

// TestToolCall: an MCP tools/call is parented on params._meta, and its
// error.type is the JSON-RPC error's code.
func TestToolCall(t *testing.T) {
	tr, exp := recorder()
	params := json.RawMessage(`{"name":"create","arguments":{},"_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","tracestate":"a=b"}}`)
	m := mcp.Message{ID: json.RawMessage(`"r1"`), Method: mcp.MethodCallTool, Params: params}
	tc, err := mcp.ParseCall(m)
	if err != nil {
		t.Fatal(err)
	}
	in := tr.Tool(httptest.NewRequest(http.MethodPost, "http://tools.example:8080/mcp", nil), route(), m, tc)
	body := mcp.ErrorResponse(m.ID, -32602, "bad")
	tr.Decision(in.Context(), Decided{Outcome: "forwarded", Resp: &http.Response{StatusCode: 200, ContentLength: int64(len(body)),
		Body: io.NopCloser(bytes.NewReader(body))}})
	s, attrs := span(t, exp, "tools/call create")
	if s.Parent.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" {
		t.Errorf("parent %v, want params._meta's", s.Parent)
	}
	want(t, attrs, map[string]string{"gen_ai.tool.name": "create", "jsonrpc.request.id": "r1", "error.type": "-32602",
		"rpc.response.status_code": "-32602", "server.port": "8080"})
}

// TestUnguarded: a request passed through, and one refused without a span,
// each end in a SERVER span named for its host.
func TestUnguarded(t *testing.T) {
	tr, exp := recorder()
	req := tr.Passthrough(httptest.NewRequest(http.MethodGet, "https://api.example/x", nil))
	tr.Request(req, "passthrough", 200)
	refused := httptest.NewRequest(http.MethodGet, "/v1/steps", nil)
	refused.Host = "proxy.local:3128"
	tr.Request(refused, "blocked", 403)
	_, attrs := span(t, exp, "GET api.example")
	want(t, attrs, map[string]string{"toolguard.outcome": "passthrough", "server.port": "443", "url.scheme": "https"})
	_, attrs = span(t, exp, "GET proxy.local")
	want(t, attrs, map[string]string{"toolguard.outcome": "blocked", "http.response.status_code": "403"})
}

// TestLookupAndProbe: the requests of a lookup are children of its
// INTERNAL span; a probe records its answer.
func TestLookupAndProbe(t *testing.T) {
	tr, exp := recorder()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer up.Close()
	req := tr.Route(httptest.NewRequest(http.MethodPost, up.URL+"/v1/charges", nil), route())
	end := tr.Lookup(req.Context(), route(), "k1")
	get, _ := http.NewRequestWithContext(req.Context(), http.MethodGet, up.URL+"/v1/charges/search", nil)
	resp, err := tr.Transport(http.DefaultTransport).RoundTrip(get)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	end(lifecycle.LookupFound)
	ctx, done := tr.Probe(context.Background(), route(), "k1")
	if trace.SpanFromContext(ctx).SpanContext().IsValid() == false {
		t.Error("the probe's context carries no span")
	}
	done(verifiers.Result{Answer: verifiers.Yes})
	l, attrs := span(t, exp, "lookup charge")
	want(t, attrs, map[string]string{"toolguard.lookup.answer": "found", "toolguard.step.key": "k1"})
	g, _ := span(t, exp, "GET")
	if g.Parent.SpanID() != l.SpanContext.SpanID() {
		t.Error("the lookup's request is not a child of its span")
	}
	_, attrs = span(t, exp, "verify charge")
	want(t, attrs, map[string]string{"toolguard.verify.answer": verifiers.Yes.String()})
}

// TestOff: without a tracer nothing is traced and requests are untouched.
func TestOff(t *testing.T) {
	for _, tr := range []*Tracer{nil, New(nil)} {
		req := httptest.NewRequest(http.MethodGet, "http://x/", nil)
		if tr.Route(req, route()) != req || tr.Passthrough(req) != req || tr.Tool(req, route(), mcp.Message{}, &mcp.Call{}) != req {
			t.Error("an untraced request was replaced")
		}
		if tr.Transport(http.DefaultTransport) != http.DefaultTransport {
			t.Error("an untraced transport was wrapped")
		}
		tr.Attempt(req.Context(), 1)
		tr.Step(req.Context(), &journal.Step{})
		tr.Decision(req.Context(), Decided{})
		tr.Request(req, "passthrough", 200)
		tr.Lookup(req.Context(), route(), "k")(lifecycle.LookupFound)
		_, done := tr.Probe(req.Context(), route(), "k")
		done(verifiers.Result{})
	}
}

// TestErrorType: a failed send is classified, never described.
func TestErrorType(t *testing.T) {
	for err, want := range map[error]string{
		context.DeadlineExceeded:                 "timeout",
		context.Canceled:                         "canceled",
		errors.Join(egress.ErrRefused, io.EOF):   "egress_refused",
		errors.New("dial tcp 10.0.0.1: refused"): "_OTHER",
	} {
		if got := errorType(err); got != want {
			t.Errorf("errorType(%v) = %q, want %q", err, got, want)
		}
	}
}

// rpcID renders JSON-RPC ids as text.
func TestRPCID(t *testing.T) {
	for raw, want := range map[string]string{`7`: "7", `"abc"`: "abc", ` 12 `: "12"} {
		if got := rpcID(json.RawMessage(raw)); got != want {
			t.Errorf("rpcID(%s) = %q, want %q", raw, got, want)
		}
	}
}
