package bolt

import (
	"bytes"
	"fmt"
	"time"

	"go.etcd.io/bbolt"

	"github.com/toolguard/toolguard/journal"
)

// Sweep removes up to batch finished steps last updated before cutoff, and
// the events older than cutoff, in one transaction. Held steps, steps with
// a pending verification, started or prepared steps and retryable failures
// are never removed: only outcomes nobody needs to act on. more reports
// that another call may find more to remove. Call it repeatedly in small
// batches: each call holds the writer lock only for its own transaction.
func (b *Journal) Sweep(cutoff time.Time, batch int) (removed int, more bool, err error) {
	return b.removeBatch("sweep journal", batch, func(bk *buckets, now time.Time, batch int) (int, bool, error) {
		removed, more, err := bk.sweepSteps(cutoff, batch, now)
		if err != nil {
			return 0, false, err
		}
		evMore, err := bk.sweepEvents(cutoff, batch)
		return removed, more || evMore, err
	})
}

// removeBatch runs one batched removal (Sweep, ExpireHolds) in its own
// write transaction: refused on a read-only journal, batch 500 when not
// positive, the read cache told that steps may go. op names the operation
// in errors.
func (b *Journal) removeBatch(op string, batch int, fn func(bk *buckets, now time.Time, batch int) (int, bool, error)) (n int, more bool, err error) {
	if b.readOnly {
		return 0, false, fmt.Errorf("%s: %w", op, journal.ErrReadOnly)
	}
	if batch <= 0 {
		batch = 500
	}
	b.sweeps.Add(1) // before the transaction (recent.go)
	b.cache.begin(nil, true)
	defer b.cache.end()
	err = b.update(func(tx *bbolt.Tx) error {
		bk, err := openBuckets(tx)
		if err != nil {
			return err
		}
		if n, more, err = fn(bk, b.now().UTC(), batch); err != nil || n == 0 {
			return err
		}
		return bumpApplied(bk.meta) // a write outside the log (checkpoint.go)
	})
	if err != nil {
		return 0, false, fmt.Errorf("%s: %w", op, err)
	}
	b.commits.Add(1)
	return n, more, nil
}

// finishedStatuses are the statuses of the steps a sweep may remove.
var finishedStatuses = []journal.Status{journal.StatusCommitted, journal.StatusVerified, journal.StatusFailed}

// sweepable reports whether a step holds only a finished outcome.
func sweepable(s *journal.Step) bool {
	return s.Terminal() && !s.Held() && s.VerifyBy.IsZero()
}

// sweepSteps walks the finished statuses of the status index by update
// time, oldest first, up to cutoff. It looks at no more than 4×batch
// entries, so that a run of old held steps cannot make a pass unbounded.
func (bk *buckets) sweepSteps(cutoff time.Time, batch int, now time.Time) (removed int, more bool, err error) {
	limit := timeBytes(cutoff)
	var victims []*journal.Step
	scanned := 0
	err = bk.byTime(finishedStatuses, false, func(t, key []byte) (bool, error) {
		if bytes.Compare(t, limit) >= 0 {
			return false, nil
		}
		if scanned++; scanned > 4*batch || len(victims) == batch {
			more = true
			return false, nil
		}
		s, err := bk.getStep(string(key))
		if err != nil {
			return false, fmt.Errorf("step %s in status index: %w", key, err)
		}
		if sweepable(s) {
			victims = append(victims, s)
		}
		return true, nil
	})
	if err != nil {
		return 0, false, err
	}
	workflows := map[[2]string]bool{} // scope, id
	for _, s := range victims {
		if err := bk.deleteStep(s); err != nil {
			return 0, false, err
		}
		if s.Workflow != "" {
			if err := bk.touchWorkflow(s.CredentialMAC, s.Workflow, s, nil, now); err != nil {
				return 0, false, err
			}
			workflows[[2]string{s.CredentialMAC, s.Workflow}] = true
		}
	}
	for ref := range workflows {
		if err := bk.dropEmptyWorkflow(ref[0], ref[1], cutoff); err != nil {
			return 0, false, err
		}
	}
	return len(victims), more, nil
}

// deleteStep removes a step, its index entries and its counts.
func (bk *buckets) deleteStep(s *journal.Step) error {
	for _, e := range bk.indexKeys(s) {
		if err := e.b.Delete(e.key); err != nil {
			return fmt.Errorf("delete index entry of %s: %w", s.Key, err)
		}
	}
	if err := bk.count(s, -1); err != nil {
		return err
	}
	if err := bk.removeStep(s.Key); err != nil {
		return fmt.Errorf("delete step %s: %w", s.Key, err)
	}
	return nil
}

// dropEmptyWorkflow removes a workflow whose steps were all swept, unless
// its checkpoint was written after cutoff.
func (bk *buckets) dropEmptyWorkflow(scope, id string, cutoff time.Time) error {
	w, err := loadWorkflow(bk.workflows, scope, id)
	if err != nil || w.Steps > 0 || !w.CheckpointAt.Before(cutoff) {
		return nil
	}
	return bk.workflows.Delete(workflowKey(scope, id))
}

// sweepEvents removes up to batch events older than cutoff, oldest first.
func (bk *buckets) sweepEvents(cutoff time.Time, batch int) (more bool, err error) {
	c := bk.events.Cursor()
	var old [][]byte
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if len(old) == batch {
			more = true
			break
		}
		var e struct {
			Time time.Time `json:"time"`
		}
		if err := jsonUnmarshal(v, &e); err != nil {
			return false, fmt.Errorf("%w: decode event %x: %v", journal.ErrCorrupt, k, err)
		}
		if !e.Time.Before(cutoff) {
			break
		}
		old = append(old, bytes.Clone(k))
	}
	for _, k := range old {
		if err := bk.events.Delete(k); err != nil {
			return false, fmt.Errorf("delete event: %w", err)
		}
	}
	return more, nil
}
