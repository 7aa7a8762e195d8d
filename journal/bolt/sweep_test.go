package bolt

import (
	"errors"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
)

func TestSweepRemovesOnlyFinishedOutcomes(t *testing.T) {
	b := mustOpen(t)
	type kind struct {
		key  string
		make func(key string)
		keep bool
	}
	committed := func(key string) {
		mustApply(t, b, key, start(key, "wf"))
		mustApply(t, b, key, transition(journal.StatusCommitted, journal.HoldNone, false))
	}
	kinds := []kind{
		{"committed", committed, false},
		{"failed", func(k string) {
			mustApply(t, b, k, start(k, ""))
			mustApply(t, b, k, transition(journal.StatusFailed, journal.HoldNone, false))
		}, false},
		{"held", func(k string) {
			mustApply(t, b, k, start(k, "wf"))
			mustApply(t, b, k, transition(journal.StatusStarted, journal.HoldNeedsReview, false))
		}, true},
		{"started", func(k string) { mustApply(t, b, k, start(k, "")) }, true},
		{"verifying", func(k string) {
			mustApply(t, b, k, start(k, ""))
			mustApply(t, b, k, func(cur *journal.Step) (journal.Change, error) {
				cur.Status, cur.Evidence, cur.VerifyBy = journal.StatusCommitted, "upstream 201", time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
				return journal.Change{Step: *cur}, nil
			})
		}, true},
		{"retryable", func(k string) {
			mustApply(t, b, k, start(k, ""))
			mustApply(t, b, k, func(cur *journal.Step) (journal.Change, error) {
				cur.Status, cur.Retryable = journal.StatusFailed, true
				return journal.Change{Step: *cur}, nil
			})
		}, true},
	}
	for _, k := range kinds {
		k.make(k.key)
	}
	cutoff := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC) // after every write of the test clock
	total := 0
	for {
		n, more, err := b.Sweep(cutoff, 1)
		if err != nil {
			t.Fatal(err)
		}
		total += n
		if !more {
			break
		}
	}
	if total != 2 {
		t.Errorf("swept %d steps, want 2", total)
	}
	for _, k := range kinds {
		_, err := b.Get(k.key)
		if got := err == nil; got != k.keep {
			t.Errorf("%s: kept = %v, want %v", k.key, got, k.keep)
		}
	}
	if evs, _ := b.Events(0, 0); len(evs) != 0 {
		t.Errorf("%d events older than the cutoff left", len(evs))
	}
	w, err := b.GetWorkflow("", "wf")
	if err != nil || w.Steps != 1 {
		t.Errorf("workflow after sweep: %+v %v, want the held step only", w, err)
	}
	c, _ := b.Count()
	if c.Steps != 4 {
		t.Errorf("counted %d steps, want 4", c.Steps)
	}
}

// TestSweepReadOnly: a read-only journal removes nothing.
func TestSweepReadOnly(t *testing.T) {
	path := tempPath(t)
	b, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	mustApply(t, b, "a", start("a", ""))
	b.Close()
	ro := mustOpenPath(t, path, Options{ReadOnly: true})
	if _, _, err := ro.Sweep(time.Now().Add(time.Hour), 0); !errors.Is(err, journal.ErrReadOnly) {
		t.Fatalf("sweep of a read-only journal: %v, want ErrReadOnly", err)
	}
}
