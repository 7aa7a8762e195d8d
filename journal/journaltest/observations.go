package journaltest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
)

// observe records an observation of key in status to (evidence set where
// the status needs it), saying that enforcement would have done w.
func observe(key string, to journal.Status, w journal.Would) journal.Mutation {
	return func(cur *journal.Step) (journal.Change, error) {
		st := newStep(key, "")
		if cur != nil {
			st = *cur
		}
		st.Observed, st.Status = true, to
		st.Attempt++
		if to == journal.StatusCommitted {
			st.Response = &journal.Response{Status: 201, BodyHash: "h"}
			st.Evidence = "observed: upstream answered 201 Created"
		}
		return journal.Change{Step: st, Event: journal.EventObserved, Reason: journal.ObservedReason(w, "test")}, nil
	}
}

// testObservations: an observation is stored with its flag and its
// event, moves between any statuses, is never held or claimed, never
// changes a guarded step (which an observation event may be added to,
// unchanged), and is replaced by a guarded step as if the key were new.
func testObservations(t *testing.T, open Opener) {
	s := fresh(t, open)
	ctx := context.Background()

	first := apply(t, s, "o", observe("o", journal.StatusCommitted, journal.WouldForward))
	if got := get(t, s, "o"); !got.Observed || got.Status != journal.StatusCommitted || got.Response == nil || got.Response.Status != 201 {
		t.Fatalf("observation read back as observed=%v %s %+v", got.Observed, got.Status, got.Response)
	}
	apply(t, s, "o", observe("o", journal.StatusStarted, journal.WouldReplay))
	apply(t, s, "o", observe("o", journal.StatusFailed, journal.WouldHoldAmbiguous))

	refused := map[string]journal.Mutation{
		"claimed": func(cur *journal.Step) (journal.Change, error) {
			ch, _ := observe("o", journal.StatusStarted, journal.WouldForward)(cur)
			ch.Claim = true
			return ch, nil
		},
		"held": func(cur *journal.Step) (journal.Change, error) {
			ch, _ := observe("o", journal.StatusFailed, journal.WouldForward)(cur)
			ch.Step.Hold, ch.Step.HoldReason = journal.HoldNeedsReview, "x"
			return ch, nil
		},
		"committed without a claim, as a guarded step": func(cur *journal.Step) (journal.Change, error) {
			st := *cur
			st.Observed, st.Status, st.Evidence = false, journal.StatusCommitted, "x"
			return journal.Change{Step: st}, nil
		},
	}
	before := get(t, s, "o")
	for name, m := range refused {
		if _, err := s.Apply(ctx, "o", m); !errors.Is(err, journal.ErrTransition) {
			t.Errorf("%s: Apply = %v, want ErrTransition", name, err)
		}
	}
	if after := get(t, s, "o"); after.Revision != before.Revision {
		t.Fatalf("refused changes wrote: revision %d, want %d", after.Revision, before.Revision)
	}

	// A guarded claim replaces the observation, as a new step.
	for !time.Now().After(first.CreatedAt) { // coarse clocks
	}
	guarded := apply(t, s, "o", func(*journal.Step) (journal.Change, error) {
		return claim("o", "wf")(nil) // the proxy claims the key as a new one
	})
	if guarded.Observed || guarded.Status != journal.StatusStarted || guarded.Attempt != 1 || guarded.Workflow != "wf" {
		t.Fatalf("guarded claim: observed=%v %s attempt %d workflow %q", guarded.Observed, guarded.Status, guarded.Attempt, guarded.Workflow)
	}
	if !guarded.CreatedAt.After(first.CreatedAt) {
		t.Errorf("guarded step kept the observation's CreatedAt %v", guarded.CreatedAt)
	}
	evs := keyEvents(t, s, "o", 4)
	if len(evs) != 4 {
		t.Fatalf("events of o: %d, want 3 observations and the claim", len(evs))
	}
	for i, want := range []journal.Would{journal.WouldForward, journal.WouldReplay, journal.WouldHoldAmbiguous} {
		if w, ok := evs[i].Would(); !ok || w != want {
			t.Errorf("event %d: %s %q reads as %v, %v; want %v", i, evs[i].Type, evs[i].Reason, w, ok, want)
		}
	}
	if ev := evs[3]; ev.Type != journal.EventStarted || ev.From != journal.StatusUnknown || ev.KeySeq != 4 {
		t.Errorf("claim event %s from %q key_seq %d; want started from nothing, key_seq 4", ev.Type, ev.From, ev.KeySeq)
	}

	// An observation never changes a guarded step; an event on it, the
	// step unchanged, is recorded.
	if _, err := s.Apply(ctx, "o", observe("o", journal.StatusCommitted, journal.WouldWait)); !errors.Is(err, journal.ErrTransition) {
		t.Errorf("observation over a guarded step: %v, want ErrTransition", err)
	}
	noted := apply(t, s, "o", func(cur *journal.Step) (journal.Change, error) {
		return journal.Change{Step: *cur, Event: journal.EventObserved, Reason: journal.ObservedReason(journal.WouldWait, "in flight")}, nil
	})
	if noted.Observed || noted.Status != journal.StatusStarted || noted.Epoch != guarded.Epoch || noted.Fence != guarded.Fence {
		t.Errorf("guarded step after an observation event: observed=%v %s epoch %d fence %d", noted.Observed, noted.Status, noted.Epoch, noted.Fence)
	}
	if evs := keyEvents(t, s, "o", 4); len(evs) != 5 || evs[4].Type != journal.EventObserved {
		t.Errorf("observation event on the guarded step not recorded: %d events", len(evs))
	}

	// Observations are swept like any finished step.
	apply(t, s, "swept", observe("swept", journal.StatusCommitted, journal.WouldForward))
	cutoff := get(t, s, "swept").UpdatedAt.Add(time.Millisecond) // past a database's rounding to microseconds
	for !time.Now().After(cutoff) {
	}
	if n, _, err := s.Sweep(cutoff, 10); err != nil || n != 1 {
		t.Fatalf("sweep removed %d, %v; want the finished observation", n, err)
	}
	if _, err := s.Get("swept"); !errors.Is(err, journal.ErrNotFound) {
		t.Errorf("observation kept after the sweep: %v", err)
	}
}
