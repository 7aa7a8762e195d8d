package abandoned

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/lifecycle"
	"github.com/toolguard/toolguard/rules"
	"github.com/toolguard/toolguard/verification"
)

// memJournal keeps steps in memory, with process-local leases.
type memJournal struct {
	mu    sync.Mutex
	steps map[string]journal.Step
}

func (j *memJournal) Epoch() uint64 { return 1 }

func (j *memJournal) Apply(_ context.Context, key string, mut journal.Mutation) (journal.Step, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	var cur *journal.Step
	if st, ok := j.steps[key]; ok {
		cur = &st
	}
	ch, err := mut(cur)
	if errors.Is(err, journal.ErrNoChange) && cur != nil {
		return *cur, nil
	}
	if err != nil {
		return journal.Step{}, err
	}
	ch.Step.Revision++
	j.steps[key] = ch.Step
	return ch.Step, nil
}

func (j *memJournal) List(journal.Filter) ([]journal.Step, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []journal.Step
	for _, st := range j.steps {
		if st.Status == journal.StatusStarted {
			out = append(out, st)
		}
	}
	return out, nil
}

const ruleFile = `api: test
hosts: ["api.test"]
credential: {header: Authorization}
routes:
  - name: by-key
    match: POST /v1/things
    effect: irreversible
    lookup:
      request: GET http://api.test/v1/things?key={{key}}
      found: {status: 200, body: {"data.#": "1"}}
      absent: {status: 200, body: {"data.#": "0"}}
      operation_id: body:data.0.id
    verify:
      request: GET http://api.test/v1/things/{{operation_id}}
      expect: {status: 200}
      within: 1h
  - name: by-ref
    match: POST /v1/refs
    effect: irreversible
    lookup:
      request: GET http://api.test/v1/refs?ref={{body.ref}}
      found: {status: 200, body: {"data.#": "1"}}
      absent: {status: 200, body: {"data.#": "0"}}
  - name: none
    match: POST /v1/none
    effect: irreversible
`

// world is a Resolver over memJournal with scripted lookups.
type world struct {
	j        *memJournal
	api      *rules.API
	now      time.Time
	active   map[string]bool
	answer   lifecycle.LookupAnswer
	lookups  []http.Header
	verified []string
	creds    verification.Credentials
	r        *Resolver
}

const abandonAfter = time.Minute

func newWorld(t *testing.T, credential bool) *world {
	t.Helper()
	src := ruleFile
	if !credential {
		src = strings.Replace(src, "credential: {header: Authorization}\n", "", 1)
	}
	api, err := rules.Parse("test.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	w := &world{j: &memJournal{steps: map[string]journal.Step{}}, api: api, now: time.Now(), active: map[string]bool{}}
	w.r = New(Config{
		Journal: w.j,
		Route: func(_, name string) *rules.Route {
			for _, r := range api.Routes {
				if r.Name == name {
					return r
				}
			}
			return nil
		},
		Active:    func(st *journal.Step, _, _ time.Time) bool { return w.active[st.Key] },
		PassEnded: func(time.Time) {},
		Lookup: func(_ context.Context, _ *rules.Route, _ *journal.Step, creds http.Header) (lifecycle.LookupAnswer, *lifecycle.Found, string) {
			w.lookups = append(w.lookups, creds)
			if w.answer == lifecycle.LookupFound {
				return w.answer, &lifecycle.Found{OperationID: "th_1", Evidence: "lookup found"}, "lookup found"
			}
			return w.answer, nil, "lookup said " + w.answer.String()
		},
		Landing:      func(*rules.Route) time.Duration { return time.Second },
		Verify:       func(j verification.Job) bool { w.verified = append(w.verified, j.Step.Key); return true },
		Credentials:  &w.creds,
		Lease:        time.Second,
		AbandonAfter: abandonAfter, UpstreamTimeout: time.Second,
		Now: func() time.Time { return w.now },
	})
	return w
}

// started journals a started step of route, last touched age ago.
func (w *world) started(key, route string, age time.Duration, observed bool) {
	w.j.steps[key] = journal.Step{Key: key, API: "test", Route: route, Status: journal.StatusStarted, Epoch: 1, Fence: 1,
		UpdatedAt: w.now.Add(-age), Observed: observed, CredentialMAC: "mac-1"}
}

func TestPassSettles(t *testing.T) {
	old := abandonAfter + time.Second
	for _, tc := range []struct {
		name       string
		route      string
		age        time.Duration
		observed   bool
		active     bool
		answer     lifecycle.LookupAnswer
		settled    int
		want       journal.Status
		wantHold   journal.Hold
		wantErr    string
		wantLookup int
		verified   bool
	}{
		{name: "found", route: "by-key", age: old, answer: lifecycle.LookupFound, settled: 1, want: journal.StatusCommitted, wantLookup: 1, verified: true},
		{name: "absent", route: "by-key", age: old, answer: lifecycle.LookupAbsent, settled: 1, want: journal.StatusFailed, wantErr: "not executed", wantLookup: 1},
		{name: "unknown", route: "by-key", age: old, answer: lifecycle.LookupUnknown, settled: 1, want: journal.StatusStarted, wantHold: journal.HoldNeedsReview, wantLookup: 1},
		{name: "no lookup", route: "none", age: old, settled: 1, want: journal.StatusStarted, wantHold: journal.HoldNeedsReview},
		{name: "lookup without its reference", route: "by-ref", age: old, settled: 1, want: journal.StatusStarted, wantHold: journal.HoldNeedsReview, wantErr: "no lookup: the request has no body.ref"},
		{name: "too young", route: "by-key", age: time.Second, want: journal.StatusStarted},
		{name: "active", route: "by-key", age: old, active: true, want: journal.StatusStarted},
		{name: "observation ended", route: "by-key", age: old, observed: true, settled: 1, want: journal.StatusFailed},
		{name: "young observation", route: "by-key", age: time.Second, observed: true, want: journal.StatusStarted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, false)
			w.started("k1", tc.route, tc.age, tc.observed)
			w.active["k1"], w.answer = tc.active, tc.answer
			if n := w.r.Pass(context.Background()); n != tc.settled {
				t.Fatalf("settled %d, want %d", n, tc.settled)
			}
			st := w.j.steps["k1"]
			if st.Status != tc.want || st.Hold != tc.wantHold || !strings.Contains(st.LastError, tc.wantErr) {
				t.Fatalf("step %v/%v %q, want %v/%v %q", st.Status, st.Hold, st.LastError, tc.want, tc.wantHold, tc.wantErr)
			}
			if len(w.lookups) != tc.wantLookup || (len(w.verified) == 1) != tc.verified {
				t.Fatalf("%d lookups, verified %v", len(w.lookups), w.verified)
			}
			if tc.settled == 1 && w.r.Pass(context.Background()) != 0 {
				t.Fatal("a settled step was settled again")
			}
		})
	}
}

// A lookup of an API with a credential waits, across passes, for the
// caller's next request to lend it; past AbandonAfter it gives up and the
// step is held without a lookup.
func TestLookupWaitsForCredential(t *testing.T) {
	for _, lent := range []bool{true, false} {
		w := newWorld(t, true)
		w.started("k1", "by-key", abandonAfter+time.Second, false)
		w.answer = lifecycle.LookupFound
		if n := w.r.Pass(context.Background()); n != 0 || len(w.lookups) != 0 {
			t.Fatalf("settled %d after %d lookups before a credential was lent", n, len(w.lookups))
		}
		if lent {
			w.creds.Lend("mac-1", w.api, http.Header{"Authorization": {"Bearer sk_1"}})
		} else {
			w.now = w.now.Add(abandonAfter)
		}
		if n := w.r.Pass(context.Background()); n != 1 {
			t.Fatalf("lent %v: settled %d, want 1", lent, n)
		}
		st := w.j.steps["k1"]
		if lent && (st.Status != journal.StatusCommitted || len(w.lookups) != 1 || w.lookups[0].Get("Authorization") != "Bearer sk_1") {
			t.Fatalf("lent: step %v after lookups %v", st.Status, w.lookups)
		}
		if !lent && (!st.Held() || len(w.lookups) != 0 || !strings.Contains(st.LastError, "credential")) {
			t.Fatalf("not lent: step %v/%v %q after %d lookups", st.Status, st.Hold, st.LastError, len(w.lookups))
		}
	}
}

// A step settled by someone else between the pass's read and its write
// is left as it is; a waiting lookup of it is released.
func TestSettledMeanwhile(t *testing.T) {
	w := newWorld(t, true)
	w.started("k1", "by-key", abandonAfter+time.Second, false)
	w.r.Pass(context.Background()) // waits for the credential
	if len(w.r.waiting) != 1 {
		t.Fatalf("%d lookups waiting, want 1", len(w.r.waiting))
	}
	st := w.j.steps["k1"]
	st.Status = journal.StatusCommitted // the caller's retry settled it
	w.j.steps["k1"] = st
	w.r.Pass(context.Background())
	if len(w.r.waiting) != 0 {
		t.Fatal("the waiting lookup of a settled step was kept")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w.r.Run(ctx, time.Hour) // one pass, then Release
}
