package proxy

import (
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
)

// Regression: a {name...} value was keyed unescaped, so PUT /x/files/a%2Fb
// and PUT /x/files/a/b (two objects at the provider) shared a key and the
// second was answered with the first one's stored response. The proxy now
// keys the escaped path.
func TestEscapedSlashInPathIsAnotherIntent(t *testing.T) {
	h := startHarness(t, harnessConfig{Routes: "  - name: put_file\n    match: PUT /x/files/{path...}\n    effect: irreversible\n"})
	var effects atomic.Int64
	var mu sync.Mutex
	var paths []string
	var handler http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		effects.Add(1)
		mu.Lock()
		paths = append(paths, r.URL.EscapedPath())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
	})
	h.up.extra.Store(&handler)
	for _, tc := range []struct{ path, outcome string }{
		{"/x/files/a%2Fb", OutcomeForwarded},
		{"/x/files/a/b", OutcomeForwarded},
		{"/x/files/a%2Fb", OutcomeReplayed},
		{"/x/files/a/b", OutcomeReplayed},
	} {
		r, _ := h.send(http.MethodPut, tc.path, `{"v":1}`, "Authorization", "Bearer k")
		if got := r.Header.Get(HeaderOutcome); got != tc.outcome {
			t.Errorf("PUT %s: outcome %q, want %q", tc.path, got, tc.outcome)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if got := effects.Load(); got != 2 {
		t.Fatalf("upstream effects = %d (%v), want 2", got, paths)
	}
}
