package journaltest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
)

// The limits on creating steps (journal.Change.Budget and MaxHolds), and
// the expiry of holds nobody settled (Store.ExpireHolds).

// limited creates key, of caller scope and route, started by a claim (or
// held for approval when held is set), with the change's limits.
func limited(key, scope, route string, held bool, budget *journal.Budget, maxHolds int) journal.Mutation {
	return func(cur *journal.Step) (journal.Change, error) {
		st := newStep(key, "")
		if cur != nil {
			st = *cur
		}
		st.CredentialMAC, st.Route = scope, route
		if held {
			st.Status, st.Hold, st.HoldReason = journal.StatusPrepared, journal.HoldAwaitingApproval, "approval_required"
			return journal.Change{Step: st, Event: journal.EventHeld, Budget: budget, MaxHolds: maxHolds}, nil
		}
		st.Status = journal.StatusStarted
		st.Attempt++
		return journal.Change{Step: st, Event: journal.EventStarted, Claim: true, Lease: time.Minute, Budget: budget, MaxHolds: maxHolds}, nil
	}
}

// testBudget: a budget counts the steps of one caller, API and route
// created within its window; a creation over it writes nothing and fails
// with ErrOverBudget; changes of existing steps are not counted; a
// mutation cannot mark a step budgeted.
func testBudget(t *testing.T, open Opener) {
	s := fresh(t, open)
	two := &journal.Budget{Calls: 2, Per: time.Hour}
	for _, k := range []string{"a1", "a2"} {
		if st := apply(t, s, k, limited(k, "caller-a", "create_invoice", false, two, 0)); !st.Budgeted {
			t.Errorf("%s within the budget: Budgeted = false", k)
		}
	}
	last, err := s.LastSeq()
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Apply(context.Background(), "a3", limited("a3", "caller-a", "create_invoice", false, two, 0))
	if !errors.Is(err, journal.ErrOverBudget) {
		t.Fatalf("third creation: %v, want ErrOverBudget", err)
	}
	if _, err := s.Get("a3"); !errors.Is(err, journal.ErrNotFound) {
		t.Errorf("a creation over the budget was written: %v", err)
	}
	if seq, _ := s.LastSeq(); seq != last {
		t.Errorf("a creation over the budget recorded events (last seq %d, was %d)", seq, last)
	}
	// Other callers and routes have budgets of their own; a change of an
	// existing step counts nothing.
	apply(t, s, "b1", limited("b1", "caller-b", "create_invoice", false, two, 0))
	apply(t, s, "a-other", limited("a-other", "caller-a", "send_invoice", false, two, 0))
	apply(t, s, "a1", limited("a1", "caller-a", "create_invoice", false, two, 0))
	apply(t, s, "a1", commit(time.Time{}))
	if st := get(t, s, "a1"); !st.Budgeted {
		t.Errorf("a1 lost Budgeted on a later change")
	}
	// A mutation's own Budgeted is not kept.
	forged := apply(t, s, "forged", func(*journal.Step) (journal.Change, error) {
		st := newStep("forged", "")
		st.Status, st.Budgeted = journal.StatusPrepared, true
		return journal.Change{Step: st, Event: journal.EventPrepared}, nil
	})
	if forged.Budgeted || get(t, s, "forged").Budgeted {
		t.Errorf("a mutation set Budgeted")
	}
	// The window slides: a step created longer than Per ago no longer
	// counts.
	created := get(t, s, "a2").CreatedAt
	short := &journal.Budget{Calls: 2, Per: time.Millisecond}
	for !time.Now().After(created.Add(5 * time.Millisecond)) { // the wall clock must pass the window
	}
	apply(t, s, "a4", limited("a4", "caller-a", "create_invoice", false, short, 0))
	if _, err := s.Apply(context.Background(), "a5", limited("a5", "caller-a", "create_invoice", false, &journal.Budget{Calls: 3, Per: time.Hour}, 0)); !errors.Is(err, journal.ErrOverBudget) {
		t.Errorf("a 3 per hour budget after 3 calls within the hour: %v, want ErrOverBudget", err)
	}
	// Swept steps leave the budget (and its index) with them.
	apply(t, s, "a4", commit(time.Time{}))
	apply(t, s, "b1", commit(time.Time{}))
	apply(t, s, "a-other", commit(time.Time{}))
	cutoff := cutoffAfter(t, s, "a1", "a4", "b1", "a-other")
	for more := true; more; {
		if _, more, err = s.Sweep(cutoff, 100); err != nil {
			t.Fatal(err)
		}
	}
	if st, err := s.Apply(context.Background(), "a6", limited("a6", "caller-a", "create_invoice", false, two, 0)); err != nil || !st.Budgeted {
		t.Errorf("after the sweep: %+v, %v", st.Budgeted, err)
	}
}

// testBudgetConcurrent: creations racing at a budget's edge, from
// concurrent callers of one journal: exactly the budget's calls are
// written, the others fail with ErrOverBudget.
func testBudgetConcurrent(t *testing.T, open Opener) {
	s := fresh(t, open)
	const n, calls = 12, 4
	budget := &journal.Budget{Calls: calls, Per: time.Hour}
	var wg sync.WaitGroup
	errs := make([]error, n)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			key := keyOf("race", i)
			_, errs[i] = s.Apply(context.Background(), key, limited(key, "caller", "create_invoice", false, budget, 0))
		}()
	}
	close(start)
	wg.Wait()
	written := 0
	for i, err := range errs {
		switch {
		case err == nil:
			written++
		case !errors.Is(err, journal.ErrOverBudget):
			t.Errorf("%s: %v", keyOf("race", i), err)
		}
	}
	if written != calls {
		t.Fatalf("%d creations written, want the budget's %d", written, calls)
	}
	c, err := s.Count()
	if err != nil || c.Steps != calls {
		t.Fatalf("count: %+v, %v; want %d steps", c, err, calls)
	}
}

// testMaxHolds: a creation of a held step is refused (ErrTooManyHolds,
// nothing written) when its caller has MaxHolds held steps; holds for
// review count, other callers and released holds do not, and steps that
// are not new or not held are never refused.
func testMaxHolds(t *testing.T, open Opener) {
	s := fresh(t, open)
	apply(t, s, "h1", limited("h1", "caller-a", "create_invoice", true, nil, 2))
	apply(t, s, "h2", limited("h2", "caller-a", "create_invoice", false, nil, 2))
	apply(t, s, "h2", hold(journal.HoldNeedsReview, "outcome_unknown")) // an existing step: never capped
	_, err := s.Apply(context.Background(), "h3", limited("h3", "caller-a", "create_invoice", true, nil, 2))
	if !errors.Is(err, journal.ErrTooManyHolds) {
		t.Fatalf("third hold: %v, want ErrTooManyHolds", err)
	}
	if _, err := s.Get("h3"); !errors.Is(err, journal.ErrNotFound) {
		t.Errorf("a hold over the cap was written: %v", err)
	}
	apply(t, s, "s1", limited("s1", "caller-a", "create_invoice", false, nil, 2)) // not held
	apply(t, s, "b1", limited("b1", "caller-b", "create_invoice", true, nil, 2))
	apply(t, s, "h1", set(journal.EventApproved, func(st *journal.Step) { st.Hold, st.HoldReason = journal.HoldNone, "" }))
	apply(t, s, "h3", limited("h3", "caller-a", "create_invoice", true, nil, 2))
	if _, err := s.Apply(context.Background(), "h4", limited("h4", "caller-a", "create_invoice", true, nil, 0)); err != nil {
		t.Errorf("MaxHolds 0 caps nothing: %v", err)
	}
}

// testExpireHolds: ExpireHolds removes the holds for approval that were
// never sent and not updated since cutoff, oldest first, in batches, with
// an expired event each; holds for review, released steps and newer holds
// stay; an expired key can be created again.
func testExpireHolds(t *testing.T, open Opener) {
	s := fresh(t, open)
	apply(t, s, "old-1", prepare("old-1", "wf", journal.HoldAwaitingApproval))
	apply(t, s, "old-2", prepare("old-2", "", journal.HoldAwaitingApproval))
	apply(t, s, "review", prepare("review", "", journal.HoldNeedsReview))
	apply(t, s, "sent", claim("sent", "wf"))
	apply(t, s, "sent", hold(journal.HoldNeedsReview, "outcome_unknown"))
	apply(t, s, "approved", prepare("approved", "", journal.HoldAwaitingApproval))
	apply(t, s, "approved", set(journal.EventApproved, func(st *journal.Step) { st.Hold, st.HoldReason = journal.HoldNone, "" }))
	cutoff := cutoffAfter(t, s, "old-1", "old-2", "review", "sent", "approved")
	apply(t, s, "new", prepare("new", "", journal.HoldAwaitingApproval))
	last, err := s.LastSeq()
	if err != nil {
		t.Fatal(err)
	}
	expired, rounds := 0, 0
	for {
		n, more, err := s.ExpireHolds(cutoff, 1)
		if err != nil {
			t.Fatalf("expire: %v", err)
		}
		expired += n
		if rounds++; !more || rounds > 10 {
			break
		}
	}
	if expired != 2 {
		t.Fatalf("expired %d holds, want old-1 and old-2", expired)
	}
	for _, k := range []string{"old-1", "old-2"} {
		if _, err := s.Get(k); !errors.Is(err, journal.ErrNotFound) {
			t.Errorf("%s kept (%v)", k, err)
		}
	}
	for _, k := range []string{"review", "sent", "approved", "new"} {
		get(t, s, k)
	}
	evs := waitEvents(t, s, last, 0, 2)
	var got []string
	for _, e := range evs {
		got = append(got, fmt.Sprintf("%s %s %d", e.Key, e.Type, e.KeySeq))
	}
	if want := "[old-1 expired 2 old-2 expired 2]"; fmt.Sprint(got) != want {
		t.Errorf("events: %v, want %s", got, want)
	}
	if w, err := s.GetWorkflow("", "wf"); err != nil || w.Steps != 1 || w.Counts.Held != 1 {
		t.Errorf("workflow after the expiry: %+v, %v; want the held step sent alone", w, err)
	}
	if n, _, err := s.ExpireHolds(cutoff, 10); err != nil || n != 0 {
		t.Errorf("second expiry: %d, %v", n, err)
	}
	apply(t, s, "old-1", prepare("old-1", "", journal.HoldAwaitingApproval))
}
