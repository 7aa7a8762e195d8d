package bolt

import (
	"context"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
)

// The committer's copy of a step it wrote is what the next Apply of the key
// starts from, and never outlives a Sweep that removed the step.
func TestRecentStepsFollowOtherWriters(t *testing.T) {
	b := mustOpenPath(t, tempPath(t), Options{})
	k := benchKey(1)
	st := mustApply(t, b, k, benchStart(k))
	if _, ok := b.recent.m[k]; !ok {
		t.Fatal("the committer kept no copy of the claim")
	}
	done := mustApply(t, b, k, benchOutcome(st.Epoch, st.Fence))
	if _, ok := b.recent.m[k]; ok {
		t.Fatal("the committer kept a step with a stored answer")
	}
	if got, _ := b.Get(k); got.Revision != done.Revision || got.Status != journal.StatusCommitted {
		t.Fatalf("after an outcome written on the kept claim: %+v", got)
	}
	if n, _, err := b.Sweep(time.Now().Add(48*time.Hour), 10); err != nil || n != 1 {
		t.Fatalf("Sweep = %d, %v", n, err)
	}
	// The key is new again: a claim must see no step, not the swept one.
	var saw *journal.Step
	_, err := b.Apply(context.Background(), k, func(cur *journal.Step) (journal.Change, error) {
		saw = cur
		return benchStart(k)(cur)
	})
	if err != nil {
		t.Fatal(err)
	}
	if saw != nil {
		t.Fatalf("a claim after the sweep saw the swept step: %+v", saw)
	}
	if errs := b.Check(); errs != nil {
		t.Fatalf("Check: %v", errs)
	}
}

// A copy handed to a mutation that changes it in depth does not change
// what the committer writes next.
func TestRecentStepsAreCopies(t *testing.T) {
	b := mustOpenPath(t, tempPath(t), Options{})
	k := benchKey(2)
	st := mustApply(t, b, k, benchStart(k))
	st = mustApply(t, b, k, benchOutcome(st.Epoch, st.Fence))
	st.Response.Body[0] = 'X' // the caller's copy
	_, err := b.Apply(context.Background(), k, func(cur *journal.Step) (journal.Change, error) {
		if cur.Response.Body[0] != '{' {
			t.Errorf("the mutation saw the caller's change: %q", cur.Response.Body)
		}
		cur.Response.Body[0] = 'Y'
		return journal.Change{}, journal.ErrNoChange
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := b.Get(k); got.Response.Body[0] != '{' {
		t.Fatalf("stored body changed: %q", got.Response.Body)
	}
}
