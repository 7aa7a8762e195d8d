package journaltest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
)

// testLifecycle walks the transitions the proxy makes, checking the
// stored step and the event each records.
func testLifecycle(t *testing.T, open Opener) {
	s := fresh(t, open)
	type step struct {
		name   string
		m      journal.Mutation
		status journal.Status
		hold   journal.Hold
		event  journal.EventType
	}
	approve := set(journal.EventApproved, func(st *journal.Step) {
		st.Status, st.Hold, st.HoldReason, st.ApprovedBodyHash, st.Decision = journal.StatusPrepared, journal.HoldNone, "", st.BodyHash, "approved"
	})
	resolve := func(status journal.Status) journal.Mutation {
		return func(cur *journal.Step) (journal.Change, error) {
			st := *cur
			st.Status, st.Hold, st.HoldReason, st.Evidence = status, journal.HoldNone, "", "operator: checked"
			if status == journal.StatusPrepared {
				st.Response = nil
			}
			return journal.Change{Step: st, Event: journal.EventResolved, Note: "checked", Claim: true}, nil
		}
	}
	paths := map[string][]step{
		"send and verify": {
			{"claim", claim("a", ""), journal.StatusStarted, journal.HoldNone, journal.EventStarted},
			{"outcome committed", commit(time.Now().Add(time.Hour)), journal.StatusCommitted, journal.HoldNone, journal.EventCommitted},
			{"verify finish", set(journal.EventVerified, func(st *journal.Step) { st.Status, st.VerifyBy = journal.StatusVerified, time.Time{} }), journal.StatusVerified, journal.HoldNone, journal.EventVerified},
		},
		"approval": {
			{"hold for approval", prepare("b", "", journal.HoldAwaitingApproval), journal.StatusPrepared, journal.HoldAwaitingApproval, journal.EventHeld},
			{"approve", approve, journal.StatusPrepared, journal.HoldNone, journal.EventApproved},
			{"claim", claim("b", ""), journal.StatusStarted, journal.HoldNone, journal.EventStarted},
			{"outcome failed, retryable", fail(true), journal.StatusFailed, journal.HoldNone, journal.EventFailed},
			{"retry", claim("b", ""), journal.StatusStarted, journal.HoldNone, journal.EventStarted},
			{"outcome unknown", set(journal.EventOutcomeUnknown, func(st *journal.Step) { st.LastError = "timeout" }), journal.StatusStarted, journal.HoldNone, journal.EventOutcomeUnknown},
			{"takeover", claim("b", ""), journal.StatusStarted, journal.HoldNone, journal.EventStarted},
			{"abandon", set(journal.EventAbandoned, func(st *journal.Step) { st.Hold, st.HoldReason = journal.HoldNeedsReview, "abandoned" }), journal.StatusStarted, journal.HoldNeedsReview, journal.EventAbandoned},
			{"resolve committed", resolve(journal.StatusCommitted), journal.StatusCommitted, journal.HoldNone, journal.EventResolved},
		},
		"not executed": {
			{"claim", claim("c", ""), journal.StatusStarted, journal.HoldNone, journal.EventStarted},
			{"hold for review", hold(journal.HoldNeedsReview, "outcome_unknown"), journal.StatusStarted, journal.HoldNeedsReview, journal.EventHeld},
			{"resolve not executed", resolve(journal.StatusPrepared), journal.StatusPrepared, journal.HoldNone, journal.EventResolved},
			{"claim again", claim("c", ""), journal.StatusStarted, journal.HoldNone, journal.EventStarted},
			{"record found", set(journal.EventRecovered, func(st *journal.Step) {
				st.Status, st.Evidence, st.OperationID = journal.StatusCommitted, "lookup found it", "op_1"
			}), journal.StatusCommitted, journal.HoldNone, journal.EventRecovered},
			{"response hash", set(journal.EventResponseHashed, func(st *journal.Step) { st.LastError = "" }), journal.StatusCommitted, journal.HoldNone, journal.EventResponseHashed},
		},
	}
	for name, path := range paths {
		t.Run(name, func(t *testing.T) {
			for _, p := range path {
				before, _ := s.LastSeq()
				key := map[string]string{"send and verify": "a", "approval": "b", "not executed": "c"}[name]
				got := apply(t, s, key, p.m)
				if got.Status != p.status || got.Hold != p.hold {
					t.Fatalf("%s: step is %s/%s, want %s/%s", p.name, got.Status, got.Hold, p.status, p.hold)
				}
				if stored := get(t, s, key); stored.Status != got.Status || stored.Revision != got.Revision {
					t.Fatalf("%s: Get returned %s rev %d, Apply %s rev %d", p.name, stored.Status, stored.Revision, got.Status, got.Revision)
				}
				evs := waitEvents(t, s, before, 0, 1)
				if len(evs) != 1 {
					t.Fatalf("%s: events after %d = %+v; want one", p.name, before, evs)
				}
				if e := evs[0]; e.Type != p.event || e.Key != key || e.To != p.status || e.Hold != p.hold || e.Epoch != got.Epoch || e.Fence != got.Fence {
					t.Fatalf("%s: event %+v, want %s to %s/%s with the step's claim", p.name, e, p.event, p.status, p.hold)
				}
			}
		})
	}
}

// allStates are the (status, hold) pairs a step can be in.
var allStates = []state{
	{status: journal.StatusPrepared},
	{status: journal.StatusPrepared, hold: journal.HoldAwaitingApproval},
	{status: journal.StatusPrepared, hold: journal.HoldNeedsReview},
	{status: journal.StatusStarted},
	{status: journal.StatusStarted, hold: journal.HoldNeedsReview},
	{status: journal.StatusCommitted},
	{status: journal.StatusCommitted, hold: journal.HoldNeedsReview},
	{status: journal.StatusVerified},
	{status: journal.StatusFailed},
	{status: journal.StatusFailed, retryable: true},
	{status: journal.StatusFailed, retryable: true, hold: journal.HoldNeedsReview},
}

// testAllowlist tries every (status, hold) change from every state, with
// and without a claim, and checks that the backend refuses exactly what
// journal.AllowedChange refuses, writing nothing then.
func testAllowlist(t *testing.T, open Opener) {
	s := fresh(t, open)
	holds := []journal.Hold{journal.HoldNone, journal.HoldAwaitingApproval, journal.HoldNeedsReview}
	n := 0
	for _, from := range allStates {
		for to := journal.StatusPrepared; to <= journal.StatusFailed; to++ {
			for _, h := range holds {
				key := keyOf("allow", n)
				n++
				cur := reach(t, s, key, from)
				ch := journal.Change{Step: cur, Claim: to == journal.StatusStarted}
				ch.Step.Status, ch.Step.Hold = to, h
				if to == journal.StatusCommitted || to == journal.StatusVerified {
					ch.Step.Evidence = "test"
				}
				want := journal.AllowedChange(&cur, &ch)
				_, err := s.Apply(context.Background(), key, func(*journal.Step) (journal.Change, error) { return ch, nil })
				name := fmt.Sprintf("%s → %s", from, state{status: to, hold: h})
				switch {
				case want == nil && err != nil:
					t.Errorf("%s: allowed, but Apply failed: %v", name, err)
				case want != nil && !errors.Is(err, journal.ErrTransition):
					t.Errorf("%s: refused by the allowlist (%v), but Apply returned %v", name, want, err)
				case want != nil:
					if after := get(t, s, key); after.Revision != cur.Revision || after.Status != cur.Status || after.Hold != cur.Hold {
						t.Errorf("%s: refused, but the step changed to %s/%s rev %d", name, after.Status, after.Hold, after.Revision)
					}
				}
			}
		}
	}
	// A new step is prepared or started, and started needs a claim.
	for to := journal.StatusPrepared; to <= journal.StatusFailed; to++ {
		for _, c := range []bool{false, true} {
			key := fmt.Sprintf("new-%s-%v", to, c)
			st := newStep(key, "")
			st.Status, st.Evidence = to, "test"
			_, err := s.Apply(context.Background(), key, func(*journal.Step) (journal.Change, error) {
				return journal.Change{Step: st, Claim: c}, nil
			})
			ok := to == journal.StatusPrepared || (to == journal.StatusStarted && c)
			if ok != (err == nil) || (!ok && !errors.Is(err, journal.ErrTransition)) {
				t.Errorf("new → %s claim=%v: err = %v, want allowed=%v", to, c, err, ok)
			}
		}
	}
}

// testMutationErrors: a mutation's error is returned and writes nothing;
// ErrNoChange returns the stored record; an invalid change is refused.
func testMutationErrors(t *testing.T, open Opener) {
	s := fresh(t, open)
	want := apply(t, s, "k", claim("k", ""))
	boom := errors.New("boom")
	if _, err := s.Apply(context.Background(), "k", func(*journal.Step) (journal.Change, error) { return journal.Change{}, boom }); !errors.Is(err, boom) {
		t.Fatalf("mutation error: got %v", err)
	}
	got, err := s.Apply(context.Background(), "k", func(cur *journal.Step) (journal.Change, error) {
		cur.Status = journal.StatusFailed // a private copy: scribbling changes nothing
		return journal.Change{}, journal.ErrNoChange
	})
	if err != nil || got.Status != journal.StatusStarted || got.Revision != want.Revision {
		t.Fatalf("ErrNoChange: got %s rev %d, %v; want the stored record", got.Status, got.Revision, err)
	}
	if _, err := s.Apply(context.Background(), "none", func(*journal.Step) (journal.Change, error) { return journal.Change{}, journal.ErrNoChange }); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("ErrNoChange on a missing key: got %v, want ErrNotFound", err)
	}
	bad := []journal.Change{
		{Step: journal.Step{Key: "other", Status: journal.StatusPrepared}},
		{Step: journal.Step{Key: "k", Status: journal.StatusUnknown}},
		{Step: journal.Step{Key: "k", Status: journal.StatusCommitted}}, // neither response nor evidence
	}
	for i, ch := range bad {
		if _, err := s.Apply(context.Background(), "k", func(*journal.Step) (journal.Change, error) { return ch, nil }); err == nil {
			t.Errorf("invalid change %d was written", i)
		}
	}
	if after := get(t, s, "k"); after.Revision != want.Revision {
		t.Fatalf("refused changes wrote: revision %d, want %d", after.Revision, want.Revision)
	}
	if _, err := s.Get("none"); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("Get of a missing key: %v", err)
	}
}

// testFencing: a stale owner's late write is refused (ErrFenced) and
// writes nothing, after another owner took the step over — in the same
// journal, and across a restart (a new epoch).
func testFencing(t *testing.T, open Opener) {
	a := open(t, Options{Name: "fence"})
	old := apply(t, a, "k", claim("k", ""))
	taken := apply(t, a, "k", claim("k", "")) // a takeover: a new claim
	late := journal.Fenced(old.Epoch, old.Fence, commit(time.Time{}))
	_, err := a.Apply(context.Background(), "k", late)
	var fe *journal.FencedError
	if !errors.Is(err, journal.ErrFenced) || !errors.As(err, &fe) || fe.Fence != taken.Fence || fe.HeldFence != old.Fence {
		t.Fatalf("late write of the old claim: %v, want a FencedError naming both claims", err)
	}
	if got := get(t, a, "k"); got.Status != journal.StatusStarted || got.Revision != taken.Revision {
		t.Fatalf("fenced write changed the step: %s rev %d", got.Status, got.Revision)
	}
	if _, err := a.Apply(context.Background(), "missing", late); !errors.Is(err, journal.ErrFenced) {
		t.Fatalf("fenced write of a missing step: %v", err)
	}
	a.Close()

	b := open(t, Options{Name: "fence"})
	defer b.Close()
	if b.Epoch() <= taken.Epoch {
		t.Fatalf("reopened epoch %d, want above %d", b.Epoch(), taken.Epoch)
	}
	mine := apply(t, b, "k", claim("k", ""))
	if mine.Epoch != b.Epoch() || mine.Fence <= taken.Fence {
		t.Fatalf("claim after restart: epoch %d fence %d, want epoch %d and a fence above %d", mine.Epoch, mine.Fence, b.Epoch(), taken.Fence)
	}
	if _, err := b.Apply(context.Background(), "k", journal.Fenced(taken.Epoch, taken.Fence, commit(time.Time{}))); !errors.Is(err, journal.ErrFenced) {
		t.Fatalf("late write of the previous epoch's claim: %v, want ErrFenced", err)
	}
	got := apply(t, b, "k", journal.Fenced(mine.Epoch, mine.Fence, commit(time.Time{})))
	if got.Status != journal.StatusCommitted || got.Epoch != mine.Epoch || got.Fence != mine.Fence {
		t.Fatalf("owner's write: %s epoch %d fence %d", got.Status, got.Epoch, got.Fence)
	}
	if errs := b.Check(); len(errs) > 0 {
		t.Fatalf("check: %v", errors.Join(errs...))
	}
}

// testEpochAndFence: a claim stamps the journal's epoch and a fence that
// increases strictly per key; a change without a claim keeps the owner,
// whatever the mutation put in Epoch and Fence.
func testEpochAndFence(t *testing.T, open Opener) {
	s := fresh(t, open)
	var last uint64
	for i := 0; i < 3; i++ {
		st := apply(t, s, "k", claim("k", ""))
		if st.Epoch != s.Epoch() || st.Fence <= last {
			t.Fatalf("claim %d: epoch %d fence %d (journal epoch %d, previous fence %d)", i, st.Epoch, st.Fence, s.Epoch(), last)
		}
		last = st.Fence
	}
	st := apply(t, s, "k", set(journal.EventOutcomeUnknown, func(st *journal.Step) { st.Epoch, st.Fence = 999, 999 }))
	if st.Epoch != s.Epoch() || st.Fence != last {
		t.Fatalf("unclaimed change moved the claim to epoch %d fence %d", st.Epoch, st.Fence)
	}
	p := apply(t, s, "p", prepare("p", "", journal.HoldNone))
	if p.Epoch != 0 || p.Fence != 0 {
		t.Fatalf("a new unclaimed step has epoch %d fence %d, want 0 0", p.Epoch, p.Fence)
	}
	if !reflect.DeepEqual(get(t, s, "k").Response, st.Response) {
		t.Fatal("Get and Apply disagree")
	}
}
