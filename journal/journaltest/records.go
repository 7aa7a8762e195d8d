package journaltest

import (
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
)

// testWorkflows: a workflow's record follows its steps: status derived
// from them, counts, current step, and a version that grows on every
// change.
func testWorkflows(t *testing.T, open Opener) {
	s := fresh(t, open)
	if _, err := s.GetWorkflow("", "wf"); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("missing workflow: %v", err)
	}
	version := uint64(0)
	expect := func(status string, steps, held int, current string) {
		t.Helper()
		w, err := s.GetWorkflow("", "wf")
		if err != nil {
			t.Fatalf("get workflow: %v", err)
		}
		if w.Status != status || w.Steps != steps || w.Held != held || w.CurrentStep != current {
			t.Fatalf("workflow: status %s steps %d held %d current %s; want %s %d %d %s", w.Status, w.Steps, w.Held, w.CurrentStep, status, steps, held, current)
		}
		if w.Version <= version {
			t.Fatalf("workflow version %d did not grow past %d", w.Version, version)
		}
		version = w.Version
		list, err := s.WorkflowSteps("", "wf")
		if err != nil || len(list) != steps {
			t.Fatalf("workflow steps: %d, %v; want %d", len(list), err, steps)
		}
		if got := journal.DeriveWorkflowStatus(list); got != status {
			t.Fatalf("status derived from the steps %s, record says %s", got, status)
		}
	}
	apply(t, s, "w1", prepare("w1", "wf", journal.HoldNone))
	expect(journal.WorkflowPlanned, 1, 0, "w1")
	apply(t, s, "w1", claim("w1", "wf"))
	expect(journal.WorkflowExecuting, 1, 0, "w1")
	apply(t, s, "w1", commit(time.Now().Add(time.Hour)))
	expect(journal.WorkflowVerifying, 1, 0, "w1")
	apply(t, s, "w2", claim("w2", "wf"))
	expect(journal.WorkflowExecuting, 2, 0, "w2")
	apply(t, s, "w2", fail(true))
	expect(journal.WorkflowFailedRetryable, 2, 0, "w2")
	apply(t, s, "w2", hold(journal.HoldNeedsReview, "retry_budget_exhausted"))
	expect(journal.WorkflowAwaitingApproval, 2, 1, "w2")
	apply(t, s, "w2", func(cur *journal.Step) (journal.Change, error) {
		st := *cur
		st.Status, st.Hold, st.HoldReason, st.Retryable, st.Evidence = journal.StatusCommitted, journal.HoldNone, "", false, "operator"
		return journal.Change{Step: st, Event: journal.EventResolved, Claim: true}, nil
	})
	apply(t, s, "w1", set(journal.EventVerified, func(st *journal.Step) { st.Status, st.VerifyBy = journal.StatusVerified, time.Time{} }))
	expect(journal.WorkflowCompleted, 2, 0, "w1")
	list, err := s.ListWorkflows(0)
	if err != nil || len(list) != 1 || list[0].ID != "wf" {
		t.Fatalf("list workflows: %+v, %v", list, err)
	}
	apply(t, s, "x", claim("x", "other"))
	if list, err := s.ListWorkflows(1); err != nil || len(list) != 1 {
		t.Fatalf("list workflows limit 1: %d, %v", len(list), err)
	}
}

// testCheckpoints: a checkpoint is a compare-and-swap on the workflow's
// version (If-Match): the first needs none, later ones must name the
// current version.
func testCheckpoints(t *testing.T, open Opener) {
	s := fresh(t, open)
	cp := json.RawMessage(`{"goal":"bill"}`)
	w1, err := s.PutCheckpoint("", "wf", nil, cp)
	if err != nil || w1.Version == 0 || string(w1.Checkpoint) != string(cp) {
		t.Fatalf("first checkpoint: %+v, %v", w1, err)
	}
	if _, err := s.PutCheckpoint("", "wf", nil, cp); !errors.Is(err, journal.ErrPreconditionRequired) {
		t.Fatalf("second checkpoint without If-Match: %v, want ErrPreconditionRequired", err)
	}
	stale := w1.Version - 1
	_, err = s.PutCheckpoint("", "wf", &stale, cp)
	var ve *journal.VersionError
	if !errors.Is(err, journal.ErrVersionMismatch) || !errors.As(err, &ve) || ve.Current != w1.Version {
		t.Fatalf("stale If-Match: %v, want a VersionError naming version %d", err, w1.Version)
	}
	cp2 := json.RawMessage(`{"goal":"bill twice"}`)
	w2, err := s.PutCheckpoint("", "wf", &w1.Version, cp2)
	if err != nil || w2.Version != w1.Version+1 {
		t.Fatalf("checkpoint with the current version: %+v, %v", w2, err)
	}
	got, err := s.GetWorkflow("", "wf")
	if err != nil || string(got.Checkpoint) != string(cp2) || got.Version != w2.Version {
		t.Fatalf("read back: %+v, %v", got, err)
	}
	// A step of the workflow moves its version on: the old one is stale.
	apply(t, s, "k", claim("k", "wf"))
	if _, err := s.PutCheckpoint("", "wf", &w2.Version, cp); !errors.Is(err, journal.ErrVersionMismatch) {
		t.Fatalf("checkpoint after a step changed the workflow: %v, want ErrVersionMismatch", err)
	}
}

// testListFilters: List selects by status, hold, workflow and pending
// verification, within its limit.
func testListFilters(t *testing.T, open Opener) {
	s := fresh(t, open)
	now := time.Now()
	apply(t, s, "p", prepare("p", "wf", journal.HoldAwaitingApproval))
	apply(t, s, "s1", claim("s1", "wf"))
	apply(t, s, "s2", claim("s2", ""))
	apply(t, s, "v2", claim("v2", ""))
	apply(t, s, "v2", commit(now.Add(2*time.Hour)))
	apply(t, s, "v1", claim("v1", ""))
	apply(t, s, "v1", commit(now.Add(time.Hour)))
	apply(t, s, "r", claim("r", ""))
	apply(t, s, "r", hold(journal.HoldNeedsReview, "outcome_unknown"))
	keys := func(f journal.Filter) map[string]bool {
		t.Helper()
		lst, err := s.List(f)
		if err != nil {
			t.Fatalf("list %+v: %v", f, err)
		}
		m := map[string]bool{}
		for _, st := range lst {
			m[st.Key] = true
		}
		return m
	}
	same := func(name string, got map[string]bool, want ...string) {
		t.Helper()
		if len(got) != len(want) {
			t.Errorf("%s: got %v, want %v", name, got, want)
			return
		}
		for _, k := range want {
			if !got[k] {
				t.Errorf("%s: got %v, want %v", name, got, want)
				return
			}
		}
	}
	same("all", keys(journal.Filter{}), "p", "s1", "s2", "v1", "v2", "r")
	same("started", keys(journal.Filter{Status: journal.StatusStarted}), "s1", "s2", "r")
	same("committed", keys(journal.Filter{Status: journal.StatusCommitted}), "v1", "v2")
	same("needs review", keys(journal.Filter{Hold: journal.HoldNeedsReview, HoldSet: true}), "r")
	same("awaiting approval", keys(journal.Filter{Hold: journal.HoldAwaitingApproval, HoldSet: true}), "p")
	same("not held", keys(journal.Filter{HoldSet: true}), "s1", "s2", "v1", "v2")
	same("started, not held", keys(journal.Filter{Status: journal.StatusStarted, HoldSet: true}), "s1", "s2")
	same("workflow", keys(journal.Filter{Workflow: "wf"}), "p", "s1")
	same("workflow started", keys(journal.Filter{Workflow: "wf", Status: journal.StatusStarted}), "s1")
	lst, err := s.List(journal.Filter{VerifyPending: true})
	if err != nil || len(lst) != 2 || lst[0].Key != "v1" || lst[1].Key != "v2" {
		t.Errorf("verify pending: %v, %v; want v1, v2 (earliest deadline first)", lst, err)
	}
	if lst, err := s.List(journal.Filter{Limit: 2}); err != nil || len(lst) != 2 {
		t.Errorf("limit 2: %d steps, %v", len(lst), err)
	}
	// Started steps by status come least recently updated first: the
	// order the resolver of abandoned steps walks them in.
	lst, err = s.List(journal.Filter{Status: journal.StatusStarted, HoldSet: true})
	if err != nil || len(lst) != 2 || lst[0].Key != "s1" || lst[1].Key != "s2" {
		t.Errorf("started, oldest first: %v, %v", lst, err)
	}
	n := 0
	if err := s.ForEach(func(journal.Step) error { n++; return nil }); err != nil || n != 6 {
		t.Errorf("ForEach: %d steps, %v", n, err)
	}
}

// testCount: the counts by status and hold follow every change.
func testCount(t *testing.T, open Opener) {
	s := fresh(t, open)
	c, err := s.Count()
	if err != nil || c.Steps != 0 {
		t.Fatalf("empty: %+v, %v", c, err)
	}
	apply(t, s, "a", claim("a", ""))
	apply(t, s, "b", claim("b", ""))
	apply(t, s, "b", commit(time.Time{}))
	apply(t, s, "c", prepare("c", "", journal.HoldAwaitingApproval))
	c, err = s.Count()
	if err != nil {
		t.Fatal(err)
	}
	want := map[journal.Status]int{journal.StatusStarted: 1, journal.StatusCommitted: 1, journal.StatusPrepared: 1}
	for st := journal.StatusPrepared; st <= journal.StatusFailed; st++ {
		if c.Status[st] != want[st] {
			t.Errorf("count %s: %d, want %d", st, c.Status[st], want[st])
		}
	}
	if c.Steps != 3 || c.Hold[journal.HoldNone] != 2 || c.Hold[journal.HoldAwaitingApproval] != 1 || c.Hold[journal.HoldNeedsReview] != 0 {
		t.Errorf("counts: %+v", c)
	}
	wantOpen(t, s, 1, 1, 0)
	apply(t, s, "d", claim("d", ""))
	apply(t, s, "d", hold(journal.HoldNeedsReview, "x"))
	apply(t, s, "c", set(journal.EventApproved, func(st *journal.Step) { st.Hold, st.HoldReason = journal.HoldNone, "" }))
	wantOpen(t, s, 2, 0, 1)
}

// wantOpen checks CountOpen against Count, and against the numbers given.
func wantOpen(t *testing.T, s journal.Store, started, awaiting, review int) {
	t.Helper()
	o, err := s.CountOpen()
	if err != nil {
		t.Fatalf("count open: %v", err)
	}
	c, err := s.Count()
	if err != nil {
		t.Fatalf("count: %v", err)
	}
	if o.Started != c.Status[journal.StatusStarted] || len(o.Held) != 2 ||
		o.Held[journal.HoldAwaitingApproval] != c.Hold[journal.HoldAwaitingApproval] || o.Held[journal.HoldNeedsReview] != c.Hold[journal.HoldNeedsReview] {
		t.Errorf("open counts %+v disagree with counts %+v", o, c)
	}
	if o.Started != started || o.Held[journal.HoldAwaitingApproval] != awaiting || o.Held[journal.HoldNeedsReview] != review {
		t.Errorf("open counts %+v, want %d started, %d awaiting approval, %d needing review", o, started, awaiting, review)
	}
}

// testSweep: a sweep removes only finished steps (committed, verified,
// definitive failures; not held, no pending verification) last updated
// before the cutoff, in batches, and keeps everything else.
func testSweep(t *testing.T, open Opener) {
	s := fresh(t, open)
	old := []string{"old-committed-1", "old-committed-2", "old-committed-3"}
	for _, k := range old {
		apply(t, s, k, claim(k, "wf"))
		apply(t, s, k, commit(time.Time{}))
	}
	apply(t, s, "old-failed", claim("old-failed", ""))
	apply(t, s, "old-failed", fail(false))
	keep := map[string]journal.Mutation{
		"old-started":   nil,
		"old-retryable": fail(true),
		"old-verifying": commit(time.Now().Add(time.Hour)),
		"old-held":      hold(journal.HoldNeedsReview, "x"),
	}
	for k, m := range keep {
		apply(t, s, k, claim(k, ""))
		if m != nil {
			apply(t, s, k, m)
		}
	}
	apply(t, s, "old-prepared", prepare("old-prepared", "", journal.HoldAwaitingApproval))
	cutoff := cutoffAfter(t, s, append(append(old, "old-failed", "old-prepared"), slices.Collect(maps.Keys(keep))...)...)
	apply(t, s, "new", claim("new", ""))
	apply(t, s, "new", commit(time.Time{}))
	if get(t, s, "new").UpdatedAt.Before(cutoff) {
		t.Fatalf("clock went backwards: new step updated before the cutoff")
	}
	removed, rounds := 0, 0
	for {
		n, more, err := s.Sweep(cutoff, 1)
		if err != nil {
			t.Fatalf("sweep: %v", err)
		}
		removed += n
		if rounds++; !more || rounds > 50 {
			break
		}
	}
	if removed != 4 {
		t.Fatalf("swept %d steps, want the 4 old finished ones", removed)
	}
	for _, k := range append(old, "old-failed") {
		if _, err := s.Get(k); !errors.Is(err, journal.ErrNotFound) {
			t.Errorf("%s kept (%v)", k, err)
		}
	}
	for _, k := range []string{"old-started", "old-retryable", "old-verifying", "old-held", "old-prepared", "new"} {
		get(t, s, k)
	}
	c, err := s.Count()
	if err != nil || c.Steps != 6 {
		t.Fatalf("count after the sweep: %+v, %v", c, err)
	}
	if n, _, err := s.Sweep(cutoff, 10); err != nil || n != 0 {
		t.Fatalf("second sweep removed %d, %v", n, err)
	}
}

// testLease: Renew succeeds for the claim that owns a started step and is
// refused (ErrFenced) for any other claim, for a step that left started,
// and for a missing step. A backend that keeps leases in the database sets
// LeaseUntil from the claim's Lease, after the time of the write, and
// Renew moves it on.
func testLease(t *testing.T, open Opener) {
	s := fresh(t, open)
	st := apply(t, s, "k", claim("k", ""))
	if err := s.Renew(t.Context(), "k", st.Epoch, st.Fence, time.Minute); err != nil {
		t.Fatalf("renew by the owner: %v", err)
	}
	if !st.LeaseUntil.IsZero() {
		if !st.LeaseUntil.After(st.UpdatedAt) {
			t.Fatalf("lease until %v, not after the claim at %v", st.LeaseUntil, st.UpdatedAt)
		}
		if got := get(t, s, "k"); got.LeaseUntil.Before(st.LeaseUntil) || !got.LeaseUntil.After(got.ReadAt) {
			t.Fatalf("after renew: lease until %v (was %v, read at %v)", got.LeaseUntil, st.LeaseUntil, got.ReadAt)
		}
	}
	if err := s.Renew(t.Context(), "k", st.Epoch, st.Fence+1, time.Minute); !errors.Is(err, journal.ErrFenced) {
		t.Fatalf("renew by another claim: %v, want ErrFenced", err)
	}
	if err := s.Renew(t.Context(), "missing", st.Epoch, st.Fence, time.Minute); !errors.Is(err, journal.ErrFenced) {
		t.Fatalf("renew of a missing step: %v, want ErrFenced", err)
	}
	apply(t, s, "k", journal.Fenced(st.Epoch, st.Fence, commit(time.Time{})))
	if err := s.Renew(t.Context(), "k", st.Epoch, st.Fence, time.Minute); !errors.Is(err, journal.ErrFenced) {
		t.Fatalf("renew of a committed step without a pending verification: %v, want ErrFenced", err)
	}
	testVerifyLease(t, s)
	seen := false
	apply(t, s, "k", func(cur *journal.Step) (journal.Change, error) {
		seen = !cur.ReadAt.IsZero()
		return journal.Change{}, journal.ErrNoChange
	})
	if !seen {
		t.Fatal("a mutation's current record has no ReadAt")
	}
}

// testVerifyLease: the claim of a committed step whose verification is
// pending is renewed for its owner (the verifier) and fenced for anyone
// else; once the verification is finished, there is nothing to lease.
func testVerifyLease(t *testing.T, s journal.Store) {
	t.Helper()
	st := apply(t, s, "v", claim("v", ""))
	st = apply(t, s, "v", journal.Fenced(st.Epoch, st.Fence, commit(time.Now().Add(time.Hour))))
	if err := s.Renew(t.Context(), "v", st.Epoch, st.Fence, time.Minute); err != nil {
		t.Fatalf("renew of a pending verification by its owner: %v", err)
	}
	if !st.LeaseUntil.IsZero() {
		if got := get(t, s, "v"); !got.LeaseUntil.After(got.ReadAt) {
			t.Fatalf("after renew of a pending verification: lease until %v, read at %v", got.LeaseUntil, got.ReadAt)
		}
	}
	if err := s.Renew(t.Context(), "v", st.Epoch, st.Fence+1, time.Minute); !errors.Is(err, journal.ErrFenced) {
		t.Fatalf("renew of a pending verification by another claim: %v, want ErrFenced", err)
	}
	// Another verifier takes the verification over with a claim: the old
	// claim is fenced, the new one renews.
	took := apply(t, s, "v", func(cur *journal.Step) (journal.Change, error) {
		return journal.Change{Step: *cur, Event: journal.EventTakenOver, Claim: true, Lease: time.Minute}, nil
	})
	if took.Status != journal.StatusCommitted || took.Fence <= st.Fence || took.VerifyBy.IsZero() {
		t.Fatalf("claim of a pending verification: %+v", took)
	}
	if !st.LeaseUntil.IsZero() && !took.LeaseUntil.After(took.UpdatedAt) {
		t.Fatalf("claim of a pending verification: lease until %v, not after %v", took.LeaseUntil, took.UpdatedAt)
	}
	if err := s.Renew(t.Context(), "v", st.Epoch, st.Fence, time.Minute); !errors.Is(err, journal.ErrFenced) {
		t.Fatalf("renew by the verifier that was taken over: %v, want ErrFenced", err)
	}
	if err := s.Renew(t.Context(), "v", took.Epoch, took.Fence, time.Minute); err != nil {
		t.Fatalf("renew by the verifier that took over: %v", err)
	}
	apply(t, s, "v", set(journal.EventVerified, func(st *journal.Step) { st.Status, st.VerifyBy = journal.StatusVerified, time.Time{} }))
	if err := s.Renew(t.Context(), "v", took.Epoch, took.Fence, time.Minute); !errors.Is(err, journal.ErrFenced) {
		t.Fatalf("renew of a verified step: %v, want ErrFenced", err)
	}
}

// testWatch: a watcher of a key is woken after a final transition of that
// key (backends may signal every commit; PostgreSQL's NOTIFY is sent on
// final transitions only); stopping a watch twice is harmless.
func testWatch(t *testing.T, open Opener) {
	s := fresh(t, open)
	apply(t, s, "k", claim("k", ""))
	ch, stop := s.Watch("k")
	defer stop()
	apply(t, s, "k", commit(time.Time{}))
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("no wake-up within 10s after a final transition of the watched key")
	}
	stop()
	stop()
}

// testKeyFields: a step's key summary is stored with it, read back by Get
// and List, and kept by later changes that do not touch it.
func testKeyFields(t *testing.T, open Opener) {
	s := fresh(t, open)
	want := []journal.KeyField{{Field: "customer", Value: `"cus_<b>1</b>"`}, {Field: "card", Value: `{"number":"[redacted]"}`}, {Field: "to"}}
	apply(t, s, "k1", func(*journal.Step) (journal.Change, error) {
		st := newStep("k1", "")
		st.Status, st.KeyFields = journal.StatusPrepared, want
		return journal.Change{Step: st, Event: journal.EventPrepared}, nil
	})
	apply(t, s, "k2", prepare("k2", "", journal.HoldNone))
	apply(t, s, "k1", claim("k1", ""))
	got := get(t, s, "k1")
	if !reflect.DeepEqual(got.KeyFields, want) {
		t.Errorf("get: key fields %q, want %q", got.KeyFields, want)
	}
	if other := get(t, s, "k2"); other.KeyFields != nil {
		t.Errorf("a step recorded without a summary reads back %q, want nil", other.KeyFields)
	}
	list, err := s.List(journal.Filter{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range list {
		if st.Key == "k1" && !reflect.DeepEqual(st.KeyFields, want) {
			t.Errorf("list: key fields %q, want %q", st.KeyFields, want)
		}
	}
}
