package proxy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolguard/toolguard/lifecycle"
	"github.com/toolguard/toolguard/policy"
)

// spanRecorder keeps every span the proxy ends, as it ends.
type spanRecorder struct{ exp *tracetest.InMemoryExporter }

// newSpanRecorder returns a recorder and the tracer that feeds it.
func newSpanRecorder() (spanRecorder, trace.Tracer) {
	exp := tracetest.NewInMemoryExporter()
	return spanRecorder{exp}, sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)).Tracer("test")
}

// spans are the spans ended so far, with the given kind and name ("" for
// any name).
func (r spanRecorder) spans(kind trace.SpanKind, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range r.exp.GetSpans() {
		if s.SpanKind == kind && (name == "" || s.Name == name) {
			out = append(out, s)
		}
	}
	return out
}

// one is the only span of that kind and name; it fails the test otherwise.
func (r spanRecorder) one(t *testing.T, kind trace.SpanKind, name string) tracetest.SpanStub {
	t.Helper()
	got := r.spans(kind, name)
	if len(got) != 1 {
		t.Fatalf("%d %s spans %q, want 1; all spans:\n%s", len(got), kind, name, r.dump())
	}
	return got[0]
}

func (r spanRecorder) dump() string {
	var b strings.Builder
	for _, s := range r.exp.GetSpans() {
		fmt.Fprintf(&b, "  %s %q span=%s parent=%s %v\n", s.SpanKind, s.Name, s.SpanContext.SpanID(), s.Parent.SpanID(), spanAttrs(s))
	}
	return b.String()
}

// noSecrets fails the test when an attribute of any span holds one of
// secrets.
func (r spanRecorder) noSecrets(t *testing.T, secrets ...string) {
	t.Helper()
	for _, s := range r.exp.GetSpans() {
		for k, v := range spanAttrs(s) {
			for _, secret := range secrets {
				if strings.Contains(v, secret) || strings.Contains(s.Name, secret) {
					t.Errorf("span %q: %s = %q holds %q", s.Name, k, v, secret)
				}
			}
		}
	}
}

func spanAttrs(s tracetest.SpanStub) map[string]string {
	m := make(map[string]string, len(s.Attributes))
	for _, kv := range s.Attributes {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

// wantAttrs fails the test for each attribute of want that s lacks or
// holds with another value ("" wants it absent).
func wantAttrs(t *testing.T, s tracetest.SpanStub, want map[string]string) {
	t.Helper()
	got := spanAttrs(s)
	for k, w := range want {
		if v, ok := got[k]; w == "" && ok || w != "" && v != w {
			t.Errorf("span %q: %s = %q, want %q", s.Name, k, v, w)
		}
	}
}

// traceparents records the traceparent header of the requests a handler
// gets.
type traceparents struct {
	mu  sync.Mutex
	got []string
}

func (tp *traceparents) record(r *http.Request) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	tp.got = append(tp.got, r.Header.Get("traceparent"))
}

func (tp *traceparents) last() string {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if len(tp.got) == 0 {
		return ""
	}
	return tp.got[len(tp.got)-1]
}

const (
	incomingTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
	incomingParent = "00f067aa0ba902b7"
	traceSecret    = "Bearer sk_live_TRACESECRET"
	traceBody      = `{"customer":"cus_BODYVALUE","amount":4200,"reference":"ref-BODYVALUE","trace_id":"t1"}`
)

// A forward is a server span continuing the caller's trace, with one
// client span whose context reaches the upstream; a replay is a server
// span alone. Neither carries the credential or a body value.
func TestTraceForwardAndReplay(t *testing.T) {
	rec, tracer := newSpanRecorder()
	h := startHarness(t, harnessConfig{Routes: invoiceRoute, Options: Options{Tracer: tracer}})
	var seen traceparents
	h.up.setHook(func(r *http.Request) bool { seen.record(r); return true })

	resp, _ := h.post("/v1/invoices", traceBody, "Authorization", traceSecret,
		"traceparent", "00-"+incomingTrace+"-"+incomingParent+"-01", HeaderWorkflow, "wf-WORKFLOWVALUE")
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("status %d", resp.StatusCode)
	}
	key := resp.Header.Get(HeaderKey)
	server := rec.one(t, trace.SpanKindServer, "POST create_invoice")
	if server.SpanContext.TraceID().String() != incomingTrace || server.Parent.SpanID().String() != incomingParent || !server.Parent.IsRemote() {
		t.Errorf("server span trace %s parent %s, want the caller's %s %s", server.SpanContext.TraceID(), server.Parent.SpanID(), incomingTrace, incomingParent)
	}
	wantAttrs(t, server, map[string]string{
		"toolguard.api": "billing", "toolguard.route": "create_invoice", "toolguard.outcome": OutcomeForwarded,
		"toolguard.decision": "forward", "toolguard.step.status": "committed", "toolguard.step.key": key,
		"toolguard.hold": "", "http.request.method": "POST", "http.response.status_code": "201",
		"server.address": "127.0.0.1", "http.route": "/v1/invoices", "url.scheme": "http",
	})
	client := rec.one(t, trace.SpanKindClient, "POST /v1/invoices")
	if client.Parent.SpanID() != server.SpanContext.SpanID() || client.SpanContext.TraceID() != server.SpanContext.TraceID() {
		t.Errorf("client span's parent %s, want the server span %s", client.Parent.SpanID(), server.SpanContext.SpanID())
	}
	wantAttrs(t, client, map[string]string{"http.response.status_code": "201", "http.request.resend_count": "", "url.template": "/v1/invoices"})
	if want := "00-" + incomingTrace + "-" + client.SpanContext.SpanID().String() + "-01"; seen.last() != want {
		t.Errorf("upstream got traceparent %q, want %q (the client span)", seen.last(), want)
	}

	resp, _ = h.post("/v1/invoices", traceBody, "Authorization", traceSecret, HeaderWorkflow, "wf-WORKFLOWVALUE")
	if o := resp.Header.Get(HeaderOutcome); o != OutcomeReplayed {
		t.Fatalf("duplicate: outcome %q", o)
	}
	servers := rec.spans(trace.SpanKindServer, "POST create_invoice")
	if len(servers) != 2 {
		t.Fatalf("%d server spans, want 2:\n%s", len(servers), rec.dump())
	}
	replay := servers[1]
	if replay.Parent.IsValid() {
		t.Errorf("a replay without traceparent has parent %s, want a new trace", replay.Parent.SpanID())
	}
	wantAttrs(t, replay, map[string]string{"toolguard.outcome": OutcomeReplayed, "toolguard.decision": "replay",
		"toolguard.step.status": "committed", "toolguard.step.key": key})
	if n := len(rec.spans(trace.SpanKindClient, "")); n != 1 {
		t.Errorf("%d client spans, want 1: a replay sends nothing:\n%s", n, rec.dump())
	}
	rec.noSecrets(t, "TRACESECRET", "BODYVALUE", "WORKFLOWVALUE", "4200")
}

// A hold is a blocked server span naming the hold, with no client span.
func TestTraceHold(t *testing.T) {
	rec, tracer := newSpanRecorder()
	h := startHarness(t, harnessConfig{Routes: approvalRoute, Options: Options{Tracer: tracer}})
	resp, _ := h.post("/v1/invoices", traceBody, "Authorization", traceSecret)
	if o := resp.Header.Get(HeaderOutcome); o != OutcomeBlocked {
		t.Fatalf("outcome %q, want blocked", o)
	}
	server := rec.one(t, trace.SpanKindServer, "POST create_invoice")
	wantAttrs(t, server, map[string]string{
		"toolguard.outcome": OutcomeBlocked, "toolguard.decision": "hold", "toolguard.reason": lifecycle.ReasonApproval,
		"toolguard.hold": "awaiting_approval", "toolguard.hold.reason": lifecycle.ReasonApproval, "toolguard.step.status": "prepared",
		"toolguard.step.key": resp.Header.Get(HeaderKey),
	})
	if n := len(rec.spans(trace.SpanKindClient, "")); n != 0 {
		t.Errorf("%d client spans for a hold, want 0", n)
	}
	rec.noSecrets(t, "TRACESECRET", "BODYVALUE")
}

// A re-send of an interrupted call (native idempotency; a lookup that
// found nothing) carries http.request.resend_count; the lookup is an
// internal span over its own client span.
func TestTraceResend(t *testing.T) {
	tests := []struct {
		name, route string
		wantLookup  bool
	}{
		{name: "native", route: `  - name: create_invoice
    match: POST /v1/invoices
    effect: irreversible
    key: {fields: [reference]}
    native_idempotency: {header: Idempotency-Key}
`},
		{name: "lookup", wantLookup: true, route: `  - name: create_invoice
    match: POST /v1/invoices
    effect: irreversible
    key: {fields: [reference]}
    lookup:
      request: GET {{sys}}/search?reference={{body.reference}}
      found: {status: 200, body: {"data.#": "1"}}
      absent: {status: 200, body: {"data.#": "0"}}
`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec, tracer := newSpanRecorder()
			var searched traceparents
			sys := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				searched.record(r)
				io.WriteString(w, `{"data":[]}`)
			}))
			t.Cleanup(sys.Close)
			h := startHarness(t, harnessConfig{Routes: strings.ReplaceAll(tc.route, "{{sys}}", sys.URL), Options: Options{Tracer: tracer}})
			h.up.setHook(func(*http.Request) bool { return false }) // sent, never answered
			h.post("/v1/invoices", traceBody, "Authorization", traceSecret)
			h.up.setHook(func(*http.Request) bool { return true })
			h.srv.now = func() time.Time { return time.Now().Add(time.Hour) } // the attempt has settled
			resp, _ := h.post("/v1/invoices", traceBody, "Authorization", traceSecret)
			if o := resp.Header.Get(HeaderOutcome); o != OutcomeRecovered {
				t.Fatalf("retry: outcome %q, want recovered:\n%s", o, rec.dump())
			}
			servers := rec.spans(trace.SpanKindServer, "POST create_invoice")
			if len(servers) != 2 {
				t.Fatalf("%d server spans, want 2:\n%s", len(servers), rec.dump())
			}
			wantAttrs(t, servers[1], map[string]string{"toolguard.outcome": OutcomeRecovered, "toolguard.decision": "forward"})
			attempts := rec.spans(trace.SpanKindClient, "POST /v1/invoices")
			if len(attempts) != 2 {
				t.Fatalf("%d attempts, want 2:\n%s", len(attempts), rec.dump())
			}
			wantAttrs(t, attempts[0], map[string]string{"http.request.resend_count": "", "error.type": "_OTHER"})
			wantAttrs(t, attempts[1], map[string]string{"http.request.resend_count": "1", "http.response.status_code": "201"})
			if attempts[1].Parent.SpanID() != servers[1].SpanContext.SpanID() {
				t.Errorf("the re-send's parent is %s, want the retry's server span", attempts[1].Parent.SpanID())
			}
			lookups := rec.spans(trace.SpanKindInternal, "lookup create_invoice")
			if !tc.wantLookup {
				if len(lookups) != 0 {
					t.Errorf("%d lookup spans, want none", len(lookups))
				}
				return
			}
			if len(lookups) != 1 {
				t.Fatalf("%d lookup spans, want 1:\n%s", len(lookups), rec.dump())
			}
			lookup := lookups[0]
			wantAttrs(t, lookup, map[string]string{"toolguard.lookup.answer": "absent", "toolguard.route": "create_invoice"})
			if lookup.Parent.SpanID() != servers[1].SpanContext.SpanID() {
				t.Errorf("the lookup's parent is %s, want the retry's server span", lookup.Parent.SpanID())
			}
			get := rec.one(t, trace.SpanKindClient, "GET")
			if get.Parent.SpanID() != lookup.SpanContext.SpanID() {
				t.Errorf("the lookup request's parent is %s, want the lookup span", get.Parent.SpanID())
			}
			if want := "00-" + get.SpanContext.TraceID().String() + "-" + get.SpanContext.SpanID().String() + "-01"; searched.last() != want {
				t.Errorf("the lookup went with traceparent %q, want %q", searched.last(), want)
			}
			rec.noSecrets(t, "TRACESECRET", "BODYVALUE")
		})
	}
}

// A synchronous verification probe is an internal span of the call.
func TestTraceVerifyProbe(t *testing.T) {
	rec, tracer := newSpanRecorder()
	sys := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{}`) }))
	t.Cleanup(sys.Close)
	routes := invoiceRoute + `    verify:
      request: GET ` + sys.URL + `/invoices/{{operation_id}}
      expect: {status: 200}
      within: 5s
      mode: sync
`
	h := startHarness(t, harnessConfig{Routes: routes, Options: Options{Tracer: tracer}})
	h.post("/v1/invoices", traceBody, "Authorization", traceSecret)
	server := rec.one(t, trace.SpanKindServer, "POST create_invoice")
	probe := rec.one(t, trace.SpanKindInternal, "verify create_invoice")
	wantAttrs(t, probe, map[string]string{"toolguard.verify.answer": "yes", "toolguard.step.key": spanAttrs(server)["toolguard.step.key"]})
	if probe.Parent.SpanID() != server.SpanContext.SpanID() {
		t.Errorf("the probe's parent is %s, want the call's span", probe.Parent.SpanID())
	}
	if get := rec.one(t, trace.SpanKindClient, "GET"); get.Parent.SpanID() != probe.SpanContext.SpanID() {
		t.Errorf("the probe request's parent is %s, want the probe span", get.Parent.SpanID())
	}
}

// A request no route guards is a passthrough server span with its client
// span; a refusal is a blocked server span.
func TestTracePassthroughAndRefusal(t *testing.T) {
	rec, tracer := newSpanRecorder()
	h := startHarness(t, harnessConfig{Routes: invoiceRoute, Options: Options{Tracer: tracer}})
	var seen traceparents
	var ping http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.record(r)
		io.WriteString(w, "pong")
	})
	h.up.extra.Store(&ping)
	req, _ := http.NewRequest(http.MethodGet, h.up.URL+"/x/ping?token=QUERYVALUE", nil)
	req.Header.Set("traceparent", "00-"+incomingTrace+"-"+incomingParent+"-01")
	resp, _ := h.do(req)
	if o := resp.Header.Get(HeaderOutcome); o != OutcomePassthrough {
		t.Fatalf("outcome %q", o)
	}
	server := rec.one(t, trace.SpanKindServer, "GET 127.0.0.1")
	wantAttrs(t, server, map[string]string{"toolguard.outcome": OutcomePassthrough, "http.response.status_code": "200", "toolguard.route": ""})
	if server.SpanContext.TraceID().String() != incomingTrace {
		t.Errorf("passthrough trace %s, want %s", server.SpanContext.TraceID(), incomingTrace)
	}
	client := rec.one(t, trace.SpanKindClient, "GET")
	if client.Parent.SpanID() != server.SpanContext.SpanID() {
		t.Errorf("client parent %s, want %s", client.Parent.SpanID(), server.SpanContext.SpanID())
	}
	if want := "00-" + incomingTrace + "-" + client.SpanContext.SpanID().String() + "-01"; seen.last() != want {
		t.Errorf("upstream got traceparent %q, want %q", seen.last(), want)
	}
	rec.noSecrets(t, "QUERYVALUE", "/x/ping")

	rec2, tracer2 := newSpanRecorder()
	h = startHarness(t, harnessConfig{Routes: invoiceRoute, Options: Options{Tracer: tracer2, Unmatched: policy.UnmatchedReject}})
	resp, _ = h.send(http.MethodGet, "/x/other", "")
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("unmatched with reject: status %d", resp.StatusCode)
	}
	wantAttrs(t, rec2.one(t, trace.SpanKindServer, "GET 127.0.0.1"), map[string]string{"toolguard.outcome": OutcomeBlocked, "http.response.status_code": "403"})
	if n := len(rec2.spans(trace.SpanKindClient, "")); n != 0 {
		t.Errorf("%d client spans for a refusal, want 0", n)
	}
}

// Without a tracer the proxy changes nothing: the caller's traceparent
// reaches the upstream as sent.
func TestNoTracerPassesTraceparent(t *testing.T) {
	h := startHarness(t, harnessConfig{Routes: invoiceRoute})
	var seen traceparents
	h.up.setHook(func(r *http.Request) bool { seen.record(r); return true })
	tp := "00-" + incomingTrace + "-" + incomingParent + "-01"
	h.post("/v1/invoices", traceBody, "traceparent", tp)
	if seen.last() != tp {
		t.Errorf("upstream got traceparent %q, want the caller's %q", seen.last(), tp)
	}
}

// An MCP tools/call is a server span named for its tool, parented on
// params._meta's traceparent, with the GenAI and MCP attributes, and
// error.type=tool_error when its result is an error.
func TestTraceMCPToolCall(t *testing.T) {
	rec, tracer := newSpanRecorder()
	ts := newTicketServer(t)
	p := newMCPProxy(t, ts, Options{Tracer: tracer})
	ctx := context.Background()
	cs := p.agent(viaGateway, "MCPSECRET").session(t, ctx)
	meta := sdk.Meta{"traceparent": "00-" + incomingTrace + "-" + incomingParent + "-01"}
	args := map[string]any{"project": "p-ARGVALUE", "title": "t-ARGVALUE"}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Meta: meta, Name: "create_ticket", Arguments: args})
	if err != nil || res.IsError {
		t.Fatalf("tools/call: %v %+v", err, res)
	}
	server := rec.one(t, trace.SpanKindServer, "tools/call create_ticket")
	if server.SpanContext.TraceID().String() != incomingTrace || server.Parent.SpanID().String() != incomingParent {
		t.Errorf("tool span trace %s parent %s, want _meta's %s %s", server.SpanContext.TraceID(), server.Parent.SpanID(), incomingTrace, incomingParent)
	}
	wantAttrs(t, server, map[string]string{
		"mcp.method.name": "tools/call", "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "create_ticket",
		"toolguard.api": "tickets", "toolguard.route": "create_ticket", "toolguard.outcome": OutcomeForwarded,
		"toolguard.step.status": "committed", "error.type": "",
	})
	if id := spanAttrs(server)["jsonrpc.request.id"]; id == "" {
		t.Error("no jsonrpc.request.id")
	}
	client := rec.one(t, trace.SpanKindClient, "tools/call create_ticket")
	if client.Parent.SpanID() != server.SpanContext.SpanID() {
		t.Errorf("attempt's parent %s, want the tool span", client.Parent.SpanID())
	}
	ts.mu.Lock()
	got := ts.callHeaders.Get("traceparent")
	ts.mu.Unlock()
	if want := "00-" + incomingTrace + "-" + client.SpanContext.SpanID().String() + "-01"; got != want {
		t.Errorf("MCP server got traceparent %q, want %q", got, want)
	}

	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "create_ticket", Arguments: map[string]any{"project": "p", "title": "fail"}})
	if err != nil || !res.IsError {
		t.Fatalf("failing tool: %v %+v", err, res)
	}
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "close_ticket", Arguments: map[string]any{"title": "t-ARGVALUE"}})
	if err != nil || !res.IsError {
		t.Fatalf("approval: %v %+v", err, res)
	}
	wantAttrs(t, rec.spans(trace.SpanKindServer, "tools/call create_ticket")[1], map[string]string{"error.type": "tool_error", "toolguard.outcome": OutcomeForwarded})
	wantAttrs(t, rec.one(t, trace.SpanKindServer, "tools/call close_ticket"), map[string]string{
		"error.type": "tool_error", "toolguard.outcome": OutcomeBlocked, "toolguard.hold": "awaiting_approval"})
	rec.noSecrets(t, "MCPSECRET", "ARGVALUE")
}
