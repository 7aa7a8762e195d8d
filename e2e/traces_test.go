package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolguard/toolguard/telemetry/telemetrytest"
)

// traceRoutes are the routes of the tracing tests: invoices with the
// provider's native idempotency (recovered after a crash by a re-send),
// and emails that need an operator's approval.
const traceRoutes = `  - name: create_invoice
    match: POST /v1/invoices
    effect: irreversible
    key:
      ignore: [trace_id]
    native_idempotency: {header: Idempotency-Key}
    operation_id: body:id
  - name: send_email
    match: POST /v1/emails
    effect: irreversible
    approval: required
`

// The credential and body values of the tracing tests, which no span may
// carry.
const (
	traceCredential = "Bearer sk_e2e_TRACESECRET"
	traceSecret     = "TRACESECRET"
)

// traceparent is a sampled W3C traceparent of trace n, from a caller's
// span.
func traceparent(n int) (header, traceID string) {
	traceID = fmt.Sprintf("%032x", 0xa11ce000+n)
	return "00-" + traceID + "-00f067aa0ba902b7-01", traceID
}

// spansOf are the spans of one trace, of one kind ("" for any).
func spansOf(spans []telemetrytest.Span, traceID, kind string) []telemetrytest.Span {
	var out []telemetrytest.Span
	for _, s := range spans {
		if s.TraceID == traceID && (kind == "" || s.Kind == kind) {
			out = append(out, s)
		}
	}
	return out
}

// serverSpan waits for the server span of traceID whose outcome is
// outcome.
func serverSpan(t *testing.T, col *telemetrytest.Collector, traceID, outcome string) telemetrytest.Span {
	t.Helper()
	var got telemetrytest.Span
	col.WaitFor(t, 30*time.Second, "the "+outcome+" server span of trace "+traceID, func(spans []telemetrytest.Span) bool {
		for _, s := range spansOf(spans, traceID, "Server") {
			if s.Attrs["toolguard.outcome"] == outcome {
				got = s
				return true
			}
		}
		return false
	})
	return got
}

// wantSpanAttrs fails the test for each attribute of want that s lacks or
// holds with another value ("" wants it absent).
func wantSpanAttrs(t *testing.T, s telemetrytest.Span, want map[string]string) {
	t.Helper()
	for k, w := range want {
		if v, ok := s.Attrs[k]; w == "" && ok || w != "" && v != w {
			t.Errorf("span %q: %s = %q, want %q", s.Name, k, v, w)
		}
	}
}

// postTraced is an agent in the trace of tp that honours 409 in-progress:
// it retries after a pause until it gets any other answer.
func postTraced(t *testing.T, c *http.Client, u, body, tp string) *http.Response {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, b := post(t, c, u, body, "Authorization", traceCredential, "traceparent", tp)
		if r.StatusCode != http.StatusConflict || !strings.Contains(b, "urn:toolguard:in-progress") || time.Now().After(deadline) {
			return r
		}
		time.Sleep(50 * time.Millisecond) // the agent's retry backoff
	}
}

// Toolguard's spans reach an OTLP/HTTP collector: a forward (server and
// client span, the upstream continuing the client span), a replay (no
// client span), a recovery after a SIGKILL (a re-send), a hold, and an
// MCP tools/call through the gateway, each in the caller's trace and none
// carrying the credential or a body value.
func TestTracesReachCollector(t *testing.T) {
	col := telemetrytest.New(t)
	up := newUpstream(t, false)
	tickets := newMCPTickets(t)
	s := newSetup(t, map[string]string{
		"billing.yaml": ruleFile(up.host(), traceRoutes),
		"tickets.yaml": mcpTicketRules(strings.TrimPrefix(strings.TrimSuffix(tickets.url, "/mcp"), "http://")),
	})
	s.env = append(s.env, "OTEL_EXPORTER_OTLP_ENDPOINT="+col.URL, "OTEL_BSP_SCHEDULE_DELAY=20",
		"OTEL_SERVICE_NAME=toolguard-e2e", "TOOLGUARD_MCP_SERVERS=tickets="+tickets.url, "TOOLGUARD_UPSTREAM_TIMEOUT=1s")

	// A call killed after its effect; the retry, after a restart, re-sends
	// it under its native idempotency key.
	killed, _ := traceparent(1)
	killMidCall(t, s.start(t), up, "after", "Authorization", traceCredential, "traceparent", killed)
	p := s.start(t)
	c := p.client(t)
	var seen struct {
		sync.Mutex
		last string
	}
	up.setHook(func(stage string, r *http.Request) bool {
		if stage == "before" {
			seen.Lock()
			seen.last = r.Header.Get("traceparent")
			seen.Unlock()
		}
		return true
	})
	upstreamTraceparent := func() string {
		seen.Lock()
		defer seen.Unlock()
		return seen.last
	}

	t.Run("recovery", func(t *testing.T) {
		tp, id := traceparent(2)
		if r := postTraced(t, c, up.URL+"/v1/invoices", invoiceBody, tp); r.Header.Get("Toolguard-Outcome") != "recovered" {
			t.Fatalf("retry after the kill: status %d, outcome %q", r.StatusCode, r.Header.Get("Toolguard-Outcome"))
		}
		server := serverSpan(t, col, id, "recovered")
		wantSpanAttrs(t, server, map[string]string{"toolguard.api": "billing", "toolguard.route": "create_invoice",
			"toolguard.decision": "forward", "toolguard.step.status": "committed"})
		if server.Resource["service.name"] != "toolguard-e2e" {
			t.Errorf("service.name = %q, want OTEL_SERVICE_NAME's", server.Resource["service.name"])
		}
		var resend telemetrytest.Span
		col.WaitFor(t, 30*time.Second, "the re-send's client span", func(spans []telemetrytest.Span) bool {
			for _, s := range spansOf(spans, id, "Client") {
				if s.ParentSpanID == server.SpanID {
					resend = s
					return true
				}
			}
			return false
		})
		wantSpanAttrs(t, resend, map[string]string{"http.request.resend_count": "1", "http.response.status_code": "201"})
	})

	t.Run("forward", func(t *testing.T) {
		tp, id := traceparent(3)
		body := strings.Replace(invoiceBody, "order-77", "order-78", 1)
		if r := postTraced(t, c, up.URL+"/v1/invoices", body, tp); r.Header.Get("Toolguard-Outcome") != "forwarded" {
			t.Fatalf("status %d, outcome %q", r.StatusCode, r.Header.Get("Toolguard-Outcome"))
		}
		server := serverSpan(t, col, id, "forwarded")
		if server.ParentSpanID != "00f067aa0ba902b7" || server.Name != "POST create_invoice" {
			t.Errorf("server span %q parent %s, want \"POST create_invoice\" under the caller's span", server.Name, server.ParentSpanID)
		}
		wantSpanAttrs(t, server, map[string]string{"toolguard.decision": "forward", "toolguard.step.status": "committed",
			"http.request.method": "POST", "http.response.status_code": "201", "server.address": "127.0.0.1"})
		if server.Attrs["toolguard.step.key"] == "" {
			t.Error("no toolguard.step.key")
		}
		spans := col.WaitFor(t, 30*time.Second, "the forward's client span", func(spans []telemetrytest.Span) bool {
			return len(spansOf(spans, id, "Client")) == 1
		})
		client := spansOf(spans, id, "Client")[0]
		if client.ParentSpanID != server.SpanID {
			t.Errorf("client span's parent %s, want the server span %s", client.ParentSpanID, server.SpanID)
		}
		wantSpanAttrs(t, client, map[string]string{"http.request.resend_count": ""})
		if want := "00-" + id + "-" + client.SpanID + "-01"; upstreamTraceparent() != want {
			t.Errorf("upstream got traceparent %q, want %q (the client span)", upstreamTraceparent(), want)
		}
	})

	t.Run("replay", func(t *testing.T) {
		tp, id := traceparent(4)
		if r := postTraced(t, c, up.URL+"/v1/invoices", invoiceBody, tp); r.Header.Get("Toolguard-Outcome") != "replayed" {
			t.Fatalf("status %d, outcome %q", r.StatusCode, r.Header.Get("Toolguard-Outcome"))
		}
		wantSpanAttrs(t, serverSpan(t, col, id, "replayed"), map[string]string{"toolguard.decision": "replay"})
		// A client span ends before its server span, and is exported first.
		if cl := spansOf(col.Spans(), id, "Client"); len(cl) != 0 {
			t.Errorf("a replay has %d client spans, want none", len(cl))
		}
	})

	t.Run("hold", func(t *testing.T) {
		tp, id := traceparent(5)
		if r := postTraced(t, c, up.URL+"/v1/emails", `{"to":"ops@example.com","subject":"SUBJECTVALUE"}`, tp); r.Header.Get("Toolguard-Outcome") != "blocked" {
			t.Fatalf("status %d, outcome %q", r.StatusCode, r.Header.Get("Toolguard-Outcome"))
		}
		wantSpanAttrs(t, serverSpan(t, col, id, "blocked"), map[string]string{"toolguard.route": "send_email",
			"toolguard.decision": "hold", "toolguard.hold": "awaiting_approval", "toolguard.step.status": "prepared"})
	})

	t.Run("mcp", func(t *testing.T) {
		tp, id := traceparent(6)
		cs := mcpSession(t, context.Background(), p, tickets, "gateway")
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Meta: sdk.Meta{"traceparent": tp},
			Name: "create_ticket", Arguments: map[string]any{"title": "TITLEVALUE"}})
		if err != nil || res.IsError {
			t.Fatalf("tools/call: %v %+v", err, res)
		}
		server := serverSpan(t, col, id, "forwarded")
		if server.Name != "tools/call create_ticket" || server.ParentSpanID != "00f067aa0ba902b7" {
			t.Errorf("tool span %q parent %s, want \"tools/call create_ticket\" under _meta's span", server.Name, server.ParentSpanID)
		}
		wantSpanAttrs(t, server, map[string]string{"mcp.method.name": "tools/call", "gen_ai.operation.name": "execute_tool",
			"gen_ai.tool.name": "create_ticket", "toolguard.api": "tickets", "toolguard.route": "create_ticket", "error.type": ""})
		if server.Attrs["jsonrpc.request.id"] == "" {
			t.Error("no jsonrpc.request.id")
		}
		col.WaitFor(t, 30*time.Second, "the tool call's client span", func(spans []telemetrytest.Span) bool {
			cl := spansOf(spans, id, "Client")
			return len(cl) == 1 && cl[0].ParentSpanID == server.SpanID && cl[0].Name == "tools/call create_ticket"
		})
	})

	for _, s := range col.Spans() {
		for k, v := range s.Attrs {
			for _, secret := range []string{traceSecret, "order-7", "SUBJECTVALUE", "TITLEVALUE", "ops@example.com"} {
				if strings.Contains(v, secret) || strings.Contains(s.Name, secret) {
					t.Errorf("span %q: %s = %q holds %q", s.Name, k, v, secret)
				}
			}
		}
	}
	if t.Failed() {
		t.Logf("spans:\n%s", telemetrytest.Dump(col.Spans()))
	}
}

// A dead collector (a closed port) costs dropped spans, counted, and
// nothing else: the same calls succeed, with the same effects, as on a
// toolguard without tracing.
func TestTracesDeadCollector(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	const calls = 20
	run := func(t *testing.T, env ...string) *proc {
		up := newUpstream(t, false)
		s := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), invoiceRoute)})
		s.env = append(s.env, env...)
		p := s.start(t)
		c := p.client(t)
		for i := range calls {
			body := strings.Replace(invoiceBody, "order-77", fmt.Sprintf("order-%d", i), 1)
			if r, b := post(t, c, up.URL+"/v1/invoices", body); r.StatusCode != http.StatusCreated {
				t.Fatalf("call %d: status %d: %s", i, r.StatusCode, b)
			}
		}
		if got := up.effects.Load(); got != calls {
			t.Errorf("upstream effects = %d, want %d", got, calls)
		}
		return p
	}
	const dropped = "toolguard_trace_spans_dropped_total"
	plain := run(t)
	if v := metricValue(t, plain, dropped); v != 0 {
		t.Errorf("without tracing, %s = %v", dropped, v)
	}
	traced := run(t, "OTEL_EXPORTER_OTLP_ENDPOINT=http://"+dead, "OTEL_BSP_SCHEDULE_DELAY=10", "OTEL_BSP_EXPORT_TIMEOUT=100")
	eventually(t, dropped+" counting the spans the dead collector did not take", func() bool {
		return metricValue(t, traced, dropped) > 0
	})
}
