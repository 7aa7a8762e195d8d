// Package journaltest is the conformance suite of toolguard's journal
// backends: one set of tests that every backend runs, so that the proxy
// can rely on the same behaviour from each (transitions and their
// allowlist, fencing, per-key event numbering, read-your-writes, workflows,
// checkpoints, filters, sweeps, leases and wake-ups, budgets, caps on
// holds and their expiry, and observations).
//
// A backend runs it from its own test file:
//
//	func TestConformance(t *testing.T) {
//		journaltest.Run(t, func(t *testing.T, opts journaltest.Options) journal.Store {
//			return openMyBackend(t, opts) // closed by the suite or by t.Cleanup
//		})
//	}
package journaltest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
)

// Options tell the opener which journal to open.
type Options struct {
	// Name identifies a journal within one test: the first open of a name
	// in a test gets a new, empty journal; a later open of the same name
	// opens the same journal again as a new owner (a restart, or another
	// replica), with a new, greater Epoch. The suite closes the earlier
	// handle first, so backends that allow one open handle (bbolt) pass.
	Name string
}

// Opener opens the journal opts name for test t. It fails t itself when
// it cannot. Handles the suite does not close must be closed by the
// opener's own t.Cleanup.
type Opener func(t *testing.T, opts Options) journal.Store

// Run runs every conformance test against the backend open opens.
func Run(t *testing.T, open Opener) {
	tests := []struct {
		name string
		fn   func(t *testing.T, open Opener)
	}{
		{"Lifecycle", testLifecycle},
		{"Allowlist", testAllowlist},
		{"MutationErrors", testMutationErrors},
		{"Fencing", testFencing},
		{"EpochAndFence", testEpochAndFence},
		{"RevisionAndKeySeq", testRevisionAndKeySeq},
		{"ConcurrentRevisions", testConcurrentRevisions},
		{"EventsOrder", testEventsOrder},
		{"ReadYourWrites", testReadYourWrites},
		{"NoLostUpdates", testNoLostUpdates},
		{"Workflows", testWorkflows},
		{"Checkpoints", testCheckpoints},
		{"WorkflowScopes", testWorkflowScopes},
		{"ListFilters", testListFilters},
		{"Count", testCount},
		{"Sweep", testSweep},
		{"Lease", testLease},
		{"Watch", testWatch},
		{"KeyFields", testKeyFields},
		{"Budget", testBudget},
		{"BudgetConcurrent", testBudgetConcurrent},
		{"MaxHolds", testMaxHolds},
		{"ExpireHolds", testExpireHolds},
		{"Observations", testObservations},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open) })
	}
}

// fresh opens a new, empty journal for t and checks it when t ends.
func fresh(t *testing.T, open Opener) journal.Store {
	t.Helper()
	s := open(t, Options{Name: "main"})
	t.Cleanup(func() {
		if errs := s.Check(); len(errs) > 0 {
			t.Errorf("check after the test: %v", errors.Join(errs...))
		}
	})
	return s
}

// apply applies m and fails t on error.
func apply(t *testing.T, s journal.Store, key string, m journal.Mutation) journal.Step {
	t.Helper()
	st, err := s.Apply(context.Background(), key, m)
	if err != nil {
		t.Fatalf("apply %s: %v", key, err)
	}
	return st
}

func get(t *testing.T, s journal.Store, key string) journal.Step {
	t.Helper()
	st, err := s.Get(key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	return st
}

// cutoffAfter is a time past the last update of every step of keys, by a
// microsecond (the precision PostgreSQL keeps), once the wall clock has
// passed it. Every step's, not the last written one's: a journal that
// stamps records with the database's clock as read with each statement
// does not stamp sequential writes in order to the microsecond under load.
func cutoffAfter(t *testing.T, s journal.Store, keys ...string) time.Time {
	t.Helper()
	var cutoff time.Time
	for _, k := range keys {
		if u := get(t, s, k).UpdatedAt; u.After(cutoff) {
			cutoff = u
		}
	}
	cutoff = cutoff.Add(time.Microsecond)
	for !time.Now().After(cutoff) { // the wall clock must pass the cutoff (coarse clocks)
	}
	return cutoff
}

// newStep is the first record of key.
func newStep(key, workflow string) journal.Step {
	return journal.Step{Key: key, API: "billing", Route: "create_invoice", Workflow: workflow,
		Method: "POST", Host: "api.example:443", Path: "/v1/invoices", BodyHash: "b-" + key}
}

// claim sends a step: it becomes started, claimed, with Attempt+1.
func claim(key, workflow string) journal.Mutation {
	return func(cur *journal.Step) (journal.Change, error) {
		st := newStep(key, workflow)
		if cur != nil {
			st = *cur
		}
		st.Status, st.Hold, st.HoldReason = journal.StatusStarted, journal.HoldNone, ""
		st.Attempt++
		return journal.Change{Step: st, Event: journal.EventStarted, Claim: true, Lease: time.Minute}, nil
	}
}

// prepare records a new step prepared, with hold h.
func prepare(key, workflow string, h journal.Hold) journal.Mutation {
	return func(cur *journal.Step) (journal.Change, error) {
		st := newStep(key, workflow)
		st.Status, st.Hold = journal.StatusPrepared, h
		if h == journal.HoldNone {
			return journal.Change{Step: st, Event: journal.EventPrepared}, nil
		}
		st.HoldReason = "test"
		return journal.Change{Step: st, Event: journal.EventHeld}, nil
	}
}

// set changes the current step with fn and records event ev.
func set(ev journal.EventType, fn func(st *journal.Step)) journal.Mutation {
	return func(cur *journal.Step) (journal.Change, error) {
		if cur == nil {
			return journal.Change{}, journal.ErrNotFound
		}
		st := *cur
		fn(&st)
		return journal.Change{Step: st, Event: ev}, nil
	}
}

// commit records a success.
func commit(verifyBy time.Time) journal.Mutation {
	return set(journal.EventCommitted, func(st *journal.Step) {
		st.Status, st.Retryable = journal.StatusCommitted, false
		st.Response = &journal.Response{Status: 201, Body: []byte(`{"id":"inv_1"}`), BodyHash: "h"}
		st.Evidence = "upstream answered 201 Created"
		st.VerifyBy = verifyBy
	})
}

func fail(retryable bool) journal.Mutation {
	return set(journal.EventFailed, func(st *journal.Step) {
		st.Status, st.Retryable = journal.StatusFailed, retryable
		st.Response = &journal.Response{Status: 429, BodyHash: "h"}
	})
}

func hold(h journal.Hold, reason string) journal.Mutation {
	return set(journal.EventHeld, func(st *journal.Step) { st.Hold, st.HoldReason = h, reason })
}

// state is a (status, hold) pair.
type state struct {
	status    journal.Status
	hold      journal.Hold
	retryable bool
}

func (s state) String() string {
	n := s.status.String()
	if s.retryable {
		n += "(retryable)"
	}
	if s.hold != journal.HoldNone {
		n += "/" + s.hold.String()
	}
	return n
}

// reach brings a new key to st through allowed transitions only.
func reach(t *testing.T, s journal.Store, key string, st state) journal.Step {
	t.Helper()
	switch st.status {
	case journal.StatusPrepared:
		return apply(t, s, key, prepare(key, "", st.hold))
	}
	apply(t, s, key, claim(key, ""))
	switch st.status {
	case journal.StatusCommitted:
		apply(t, s, key, commit(time.Now().Add(time.Hour)))
	case journal.StatusVerified:
		apply(t, s, key, commit(time.Now().Add(time.Hour)))
		apply(t, s, key, set(journal.EventVerified, func(st *journal.Step) { st.Status, st.VerifyBy = journal.StatusVerified, time.Time{} }))
	case journal.StatusFailed:
		apply(t, s, key, fail(st.retryable))
	}
	if st.hold != journal.HoldNone {
		apply(t, s, key, hold(st.hold, "test"))
	}
	got := get(t, s, key)
	if got.Status != st.status || got.Hold != st.hold {
		t.Fatalf("reach %s: step is %s/%s", st, got.Status, got.Hold)
	}
	return got
}

func keyOf(prefix string, i int) string { return fmt.Sprintf("%s-%03d", prefix, i) }
