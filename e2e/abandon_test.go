package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// keyedUpstream is a provider that dedupes on Idempotency-Key and can be
// asked, by that key, whether a call took effect. A gate holds the next
// create before or after its effect, so that toolguard can be killed
// while the call is in flight.
type keyedUpstream struct {
	*httptest.Server
	effects atomic.Int64
	mu      sync.Mutex
	byKey   map[string]string
	gate    func(stage string) // nil: no gate
}

func newKeyedUpstream(t *testing.T) *keyedUpstream {
	u := &keyedUpstream{byKey: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/invoices", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		u.mu.Lock()
		gate := u.gate
		u.mu.Unlock()
		if gate != nil {
			gate("before")
		}
		key := r.Header.Get("Idempotency-Key")
		u.mu.Lock()
		id, seen := u.byKey[key]
		if !seen {
			id = fmt.Sprintf("inv_%d", u.effects.Add(1))
			u.byKey[key] = id
		}
		u.mu.Unlock()
		if gate != nil {
			gate("after")
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id":%q}`, id)
	})
	mux.HandleFunc("GET /v1/invoices", func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		id, ok := u.byKey[r.URL.Query().Get("idempotency_key")]
		u.mu.Unlock()
		if !ok {
			io.WriteString(w, `{"data":[]}`)
			return
		}
		fmt.Fprintf(w, `{"data":[{"id":%q}]}`, id)
	})
	u.Server = httptest.NewServer(mux)
	t.Cleanup(u.Close)
	return u
}

func (u *keyedUpstream) host() string { return strings.TrimPrefix(u.URL, "http://") }

// killDuring sends one guarded call and SIGKILLs toolguard while the
// upstream holds it at stage: "before" drops the call with no effect (the
// provider never saw it), "after" commits the effect and loses the answer.
func (u *keyedUpstream) killDuring(t *testing.T, p *proc, stage string) {
	t.Helper()
	reached, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	u.mu.Lock()
	u.gate = func(s string) {
		if s != stage {
			return
		}
		once.Do(func() { close(reached) })
		<-release
		if s == "before" {
			panic(http.ErrAbortHandler) // the connection drops; no effect
		}
	}
	u.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := p.client(t).Post(u.URL+"/v1/invoices", "application/json", strings.NewReader(invoiceBody)); err == nil {
			resp.Body.Close()
		}
	}()
	<-reached
	p.kill()
	close(release)
	<-done
	u.mu.Lock()
	u.gate = nil
	u.mu.Unlock()
}

// TestAbandonedStepResolvedInBackground: a call interrupted by a SIGKILL
// whose agent never retries is settled by the background resolver after
// recovery.abandon_after, without ever being sent again: held for review
// (reason abandoned, listed by review ls) when the route has no lookup;
// committed when the lookup finds the effect; failed and retryable when
// it finds none, so that a later retry sends it once.
func TestAbandonedStepResolvedInBackground(t *testing.T) {
	tests := []struct {
		name        string
		lookup      bool
		stage       string
		status      string
		hold        string
		reason      string
		effects     int64
		retryStatus int
	}{
		{name: "irreversible without a lookup", stage: "after", status: "started", hold: "needs_review", reason: "abandoned", effects: 1},
		{name: "lookup finds the effect", lookup: true, stage: "after", status: "committed", effects: 1, retryStatus: http.StatusCreated},
		{name: "lookup finds no effect", lookup: true, stage: "before", status: "failed", effects: 0, retryStatus: http.StatusCreated},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			up := newKeyedUpstream(t)
			route := `  - name: create_invoice
    match: POST /v1/invoices
    effect: irreversible
    key:
      ignore: [trace_id]
    operation_id: body:id
`
			if tc.lookup {
				route += fmt.Sprintf(`    native_idempotency: {header: Idempotency-Key}
    lookup:
      request: GET http://%s/v1/invoices?idempotency_key={{key}}
      found: {status: 200, body: {"data.#": "1"}}
      absent: {status: 200, body: {"data.#": "0"}}
      operation_id: body:data.0.id
`, up.host())
			}
			// Nobody comes back to lend a credential: the lookup needs none.
			s := newSetup(t, map[string]string{"billing.yaml": sharedRuleFile(up.host(), route)})
			s.env = append(s.env, "TOOLGUARD_UPSTREAM_TIMEOUT=1s", "TOOLGUARD_RECOVERY_LEASE=1s", "TOOLGUARD_RECOVERY_ABANDON_AFTER=1s")
			up.killDuring(t, s.start(t), tc.stage)

			// Restarted, and nobody retries: the resolver settles the step.
			p := s.start(t)
			var key string
			eventually(t, "the abandoned step", func() bool {
				steps := stepsOf(t, p, "")
				if len(steps) != 1 {
					t.Fatalf("steps = %v, want one", steps)
				}
				key, _ = steps[0]["key"].(string)
				return steps[0]["status"] != "started" || steps[0]["hold"] != ""
			})
			st := waitStep(t, p, key, func(map[string]any) bool { return true })
			if st["status"] != tc.status || st["hold"] != tc.hold || (tc.reason != "" && st["hold_reason"] != tc.reason) {
				t.Fatalf("step = %v, want %s, hold %q, reason %q", st, tc.status, tc.hold, tc.reason)
			}
			if got := up.effects.Load(); got != tc.effects {
				t.Fatalf("upstream effects = %d, want %d: the resolver must never send", got, tc.effects)
			}
			abandoned := false
			for _, e := range eventsOf(t, p) {
				abandoned = abandoned || (e["key"] == key && e["type"] == "abandoned")
			}
			if !abandoned {
				t.Errorf("no abandoned event for %s", key)
			}
			if tc.hold != "" {
				out, err := p.cli("review", "ls", "--admin", p.adminURL).CombinedOutput()
				if err != nil || !strings.Contains(string(out), key) || !strings.Contains(string(out), "abandoned") {
					t.Fatalf("review ls does not show the abandoned step: %v\n%s", err, out)
				}
				return
			}
			if tc.status == "committed" && st["operation_id"] != "inv_1" {
				t.Errorf("operation_id = %v, want inv_1 (the lookup's evidence)", st["operation_id"])
			}
			// A late retry: answered from the journal (found), or sent once
			// (absent: nothing happened at the provider).
			r, body := post(t, p.client(t), up.URL+"/v1/invoices", invoiceBody)
			if r.StatusCode != tc.retryStatus && !(tc.status == "committed" && r.StatusCode == http.StatusOK) {
				t.Fatalf("late retry: %d %s", r.StatusCode, body)
			}
			if got := up.effects.Load(); got != 1 {
				t.Fatalf("upstream effects after a late retry = %d, want 1", got)
			}
		})
	}
}
