package proxy

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/problem"
)

// failingJournal fails every write while fail is set, as a full disk
// does: the mutation never runs and nothing is written.
type failingJournal struct {
	journal.Store
	fail atomic.Bool
}

func (f *failingJournal) Apply(ctx context.Context, key string, m journal.Mutation) (journal.Step, error) {
	if f.fail.Load() {
		return journal.Step{}, fmt.Errorf("write step %s: %w", key, syscall.ENOSPC)
	}
	return f.Store.Apply(ctx, key, m)
}

// Ping fails while writes fail, as a full disk's probe write would.
func (f *failingJournal) Ping(ctx context.Context) error {
	if f.fail.Load() {
		return fmt.Errorf("ping: %w", syscall.ENOSPC)
	}
	return f.Store.Ping(ctx)
}

// Regression: /readyz stayed 200 while every guarded call got 503 because
// the journal could not write.
func TestReadyzFollowsJournalWrites(t *testing.T) {
	fj := &failingJournal{}
	h := startHarness(t, harnessConfig{Routes: invoiceRoute, WrapJournal: func(j journal.Store) journal.Store { fj.Store = j; return fj }})
	ready := func() int {
		resp, err := http.Get(h.adminURL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	const failures = "toolguard_journal_write_failures_total"
	if got, m := ready(), h.metric(failures); got != http.StatusOK || m != "0" {
		t.Fatalf("at start: readyz %d, %s %q; want 200, 0", got, failures, m)
	}
	fj.fail.Store(true)
	for i := range 2 {
		if r, b := h.post("/v1/invoices", fmt.Sprintf(`{"n":%d}`, i)); r.StatusCode != http.StatusServiceUnavailable || !strings.Contains(b, problem.Unavailable) {
			t.Fatalf("call with a full disk: %d %s, want 503 unavailable", r.StatusCode, b)
		}
	}
	if got, m := ready(), h.metric(failures); got != http.StatusServiceUnavailable || m != "2" {
		t.Fatalf("after failed writes: readyz %d, %s %q; want 503, 2", got, failures, m)
	}
	if got := h.up.effects.Load(); got != 0 {
		t.Fatalf("upstream effects = %d, want 0: nothing is sent unjournaled", got)
	}
	fj.fail.Store(false)
	if r, b := h.post("/v1/invoices", `{"n":0}`); r.StatusCode != http.StatusCreated {
		t.Fatalf("call after the disk has room: %d %s, want 201", r.StatusCode, b)
	}
	if got := ready(); got != http.StatusOK {
		t.Fatalf("after a successful write: readyz %d, want 200", got)
	}
}

// Regression: a refused request's decision line logged "why":"" (a 400
// invalid-body, for one). Every refusal says why.
func TestRefusalsLogWhy(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		prepare func(h *harness)
		send    func(h *harness) *http.Response
		status  int
	}{
		{name: "invalid body", status: http.StatusBadRequest,
			send: func(h *harness) *http.Response { r, _ := h.post("/v1/invoices", `{"customer":`); return r }},
		{name: "too large", opts: Options{MaxBody: 16}, status: http.StatusRequestEntityTooLarge,
			send: func(h *harness) *http.Response {
				r, _ := h.post("/v1/invoices", `{"customer":"`+strings.Repeat("x", 64)+`"}`)
				return r
			}},
		{name: "draining", status: http.StatusServiceUnavailable,
			prepare: func(h *harness) { h.srv.SetDraining(true) },
			send:    func(h *harness) *http.Response { r, _ := h.post("/v1/invoices", `{"n":1}`); return r }},
		{name: "headers too large", opts: Options{MaxHeaderBytes: 512}, status: http.StatusRequestHeaderFieldsTooLarge,
			send: func(h *harness) *http.Response {
				r, _ := h.post("/v1/invoices", `{"n":1}`, "X-Padding", strings.Repeat("p", 1024))
				return r
			}},
		{name: "unmatched reject", opts: Options{Unmatched: policy.UnmatchedReject}, status: http.StatusForbidden,
			send: func(h *harness) *http.Response { r, _ := h.post("/v1/emails", `{"to":"a"}`); return r }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := startHarness(t, harnessConfig{Routes: invoiceRoute, Options: tc.opts})
			if tc.prepare != nil {
				tc.prepare(h)
			}
			if r := tc.send(h); r.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", r.StatusCode, tc.status)
			}
			lines := h.decisionLines()
			if len(lines) != 1 {
				t.Fatalf("decision lines = %v, want one", lines)
			}
			if why, _ := lines[0]["why"].(string); why == "" || lines[0]["outcome"] != OutcomeBlocked {
				t.Fatalf("decision line %v, want outcome blocked and a why", lines[0])
			}
		})
	}
}

// Regression: under unmatched: reject a GET no route matches passed. Every
// method is refused, over HTTP and inside an intercepted CONNECT tunnel; a
// route's read with effect: safe still passes.
func TestUnmatchedRejectRefusesEveryMethod(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		t.Run(map[bool]string{false: "http", true: "https"}[useTLS], func(t *testing.T) {
			h := startHarness(t, harnessConfig{TLS: useTLS, Routes: invoiceRoute, RuleHost: "elsewhere.example",
				Options: Options{Unmatched: policy.UnmatchedReject}, ConnectToUpstream: true})
			for _, method := range []string{http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodPost, http.MethodPut, http.MethodDelete} {
				r, b := h.send(method, "/v1/ping", "")
				if r.StatusCode != http.StatusForbidden || r.Header.Get(HeaderOutcome) != OutcomeBlocked {
					t.Errorf("%s: %d %q %s, want 403 blocked", method, r.StatusCode, r.Header.Get(HeaderOutcome), b)
				}
			}
			if got := h.up.effects.Load(); got != 0 {
				t.Fatalf("upstream effects = %d, want 0", got)
			}
			if got := h.metric(`toolguard_rejected_total{reason="unmatched"}`); got != "6" {
				t.Errorf("rejected{unmatched} = %q, want 6", got)
			}
		})
	}
}

// A read that a route describes as safe passes under unmatched: reject.
func TestUnmatchedRejectPassesSafeRoutes(t *testing.T) {
	h := startHarness(t, harnessConfig{Routes: invoiceRoute + `  - name: ping
    match: GET /v1/ping
    effect: safe
`, Options: Options{Unmatched: policy.UnmatchedReject}})
	if r, b := h.send(http.MethodGet, "/v1/ping", ""); r.StatusCode != http.StatusOK || b != "pong" {
		t.Fatalf("safe read: %d %s, want 200 pong", r.StatusCode, b)
	}
	if r, _ := h.send(http.MethodGet, "/v1/other", ""); r.StatusCode != http.StatusForbidden {
		t.Fatalf("unmatched read: %d, want 403", r.StatusCode)
	}
}

// Regression: counters appeared only after their first event, so rates
// and alerts had no series to look at.
func TestCountersExistAtZero(t *testing.T) {
	h := startHarness(t, harnessConfig{Routes: invoiceRoute})
	for _, sample := range []string{
		`toolguard_rejected_total{reason="draining"}`,
		`toolguard_rejected_total{reason="invalid_body"}`,
		`toolguard_recoveries_total{result="found",strategy="lookup"}`,
		`toolguard_verifications_total{result="not_visible"}`,
		`toolguard_requests_total{api="billing",outcome="forwarded",route="create_invoice"}`,
		`toolguard_requests_total{api="billing",outcome="blocked",route="create_invoice"}`,
		`toolguard_journal_write_failures_total`,
	} {
		if got := h.metric(sample); got != "0" {
			t.Errorf("%s = %q, want 0", sample, got)
		}
	}
}

// A refused CONNECT has its decision line too, with the reason.
func TestRefusedConnectLogsWhy(t *testing.T) {
	h := startHarness(t, harnessConfig{Routes: invoiceRoute, RuleHost: "elsewhere.example"})
	// The provider's port is not on upstream.connect_ports: no tunnel.
	if _, err := h.client.Get("https://" + h.up.host() + "/v1/ping"); err == nil {
		t.Fatal("the tunnel was opened")
	}
	lines := h.decisionLines()
	if len(lines) != 1 || lines[0]["method"] != http.MethodConnect || lines[0]["outcome"] != OutcomeBlocked || lines[0]["why"] == "" {
		t.Fatalf("decision lines = %v, want one blocked CONNECT with a why", lines)
	}
}
