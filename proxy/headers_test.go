package proxy

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/toolguard/toolguard/internal/headerfilter"
	"github.com/toolguard/toolguard/metrics"
)

// headerRecorder is an upstream handler that records the headers of each
// request and answers with Toolguard-* headers of its own, as a hostile
// or confused upstream might.
type headerRecorder struct {
	mu   sync.Mutex
	seen []http.Header
}

func (h *headerRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.seen = append(h.seen, r.Header.Clone())
	h.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Toolguard-Key", "upstream-key")
	w.Header().Set("Toolguard-Outcome", OutcomeReplayed)
	w.Header().Set("toolguard-approved", "yes")
	w.WriteHeader(http.StatusOK)
	w.Write([]byte(`{"id":"x_1"}`))
}

func (h *headerRecorder) last(t *testing.T) http.Header {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.seen) == 0 {
		t.Fatal("the upstream got no request")
	}
	return h.seen[len(h.seen)-1]
}

// Regression: agent-sent Toolguard-* headers (Toolguard-Key,
// Toolguard-Outcome, ...) reached the upstream, and an upstream's
// Toolguard-* response headers reached the agent as if toolguard had set
// them. Every Toolguard-* request header is now stripped before
// forwarding (the documented ones read first), and every upstream
// Toolguard-* response header is dropped before toolguard stamps its own:
// guarded and passthrough, plain and intercepted.
func TestToolguardHeadersStripped(t *testing.T) {
	sent := []string{
		HeaderWorkflow, "wf-1", HeaderPromptVersion, "p1", HeaderPolicyVersion, "v1",
		HeaderKey, "agent-key", HeaderOutcome, OutcomeReplayed, "Toolguard-Anything", "x", "toolguard-lower", "y",
		"X-Kept", "kept",
	}
	for _, tls := range []bool{false, true} {
		for _, tc := range []struct {
			name, method, path, outcome string
		}{
			{name: "guarded", method: http.MethodPost, path: "/x/orders", outcome: OutcomeForwarded},
			{name: "passthrough", method: http.MethodGet, path: "/x/orders", outcome: OutcomePassthrough},
		} {
			name := tc.name + map[bool]string{false: "/http", true: "/intercepted"}[tls]
			t.Run(name, func(t *testing.T) {
				rec := &headerRecorder{}
				h := startHarness(t, harnessConfig{TLS: tls, Routes: "  - {name: order, match: POST /x/orders, effect: irreversible, key: {fields: [n]}}\n"})
				var handler http.Handler = rec
				h.up.extra.Store(&handler)
				resp, _ := h.send(tc.method, tc.path, `{"n":1}`, append([]string{"Authorization", "Bearer k"}, sent...)...)
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("status %d, want 200", resp.StatusCode)
				}
				got := rec.last(t)
				for k := range got {
					if headerfilter.IsToolguard(k) {
						t.Errorf("the upstream got %s: %q", k, got[k])
					}
				}
				if got.Get("X-Kept") != "kept" {
					t.Errorf("X-Kept = %q, want it forwarded", got.Get("X-Kept"))
				}
				if steps := h.steps(); tc.outcome == OutcomeForwarded && (len(steps) != 1 || steps[0].Workflow != "wf-1") {
					t.Errorf("steps %+v, want one in workflow wf-1 (the header is consumed, not lost)", steps)
				}
				if o := resp.Header.Get(HeaderOutcome); o != tc.outcome {
					t.Errorf("Toolguard-Outcome = %q, want %q", o, tc.outcome)
				}
				if k := resp.Header.Get(HeaderKey); k == "upstream-key" || (tc.outcome == OutcomePassthrough && k != "") {
					t.Errorf("Toolguard-Key = %q: the upstream's reached the agent", k)
				}
				if v := resp.Header.Values(HeaderOutcome); len(v) != 1 {
					t.Errorf("Toolguard-Outcome values %q, want exactly toolguard's", v)
				}
				for k := range resp.Header {
					if strings.EqualFold(k, "Toolguard-Approved") {
						t.Errorf("the agent got the upstream's %s", k)
					}
				}
			})
		}
	}
}

// TestOutcomeLabels: the outcome label of toolguard_requests_total uses the
// words of the Toolguard-Outcome header.
func TestOutcomeLabels(t *testing.T) {
	for header, label := range map[string]string{
		OutcomeForwarded: metrics.OutcomeForwarded, OutcomeReplayed: metrics.OutcomeReplayed,
		OutcomeRecovered: metrics.OutcomeRecovered, OutcomeBlocked: metrics.OutcomeBlocked,
		OutcomePassthrough: metrics.OutcomePassthrough,
	} {
		if header != label {
			t.Errorf("Toolguard-Outcome %q is counted as %q", header, label)
		}
	}
}
