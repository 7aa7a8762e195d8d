package bolt

import (
	"bytes"
	"fmt"
	"time"

	"github.com/toolguard/toolguard/journal"
)

// ExpireHolds removes up to batch steps held for approval and never sent
// (journal.Step.Expirable) that were last updated before cutoff, oldest
// first, in one transaction, and records an expired event for each. They
// are found through idx_expiry, which holds exactly those steps, so a
// pass reads nothing else.
func (b *Journal) ExpireHolds(cutoff time.Time, batch int) (expired int, more bool, err error) {
	return b.removeBatch("expire holds", batch, func(bk *buckets, now time.Time, batch int) (int, bool, error) {
		return bk.expireHolds(cutoff, batch, now)
	})
}

// expireHolds removes the expirable steps of idx_expiry older than
// cutoff, up to batch of them.
func (bk *buckets) expireHolds(cutoff time.Time, batch int, now time.Time) (expired int, more bool, err error) {
	limit := timeBytes(cutoff)
	var victims []*journal.Step
	c := bk.byExpiry.Cursor()
	for k, _ := c.First(); len(k) > 8 && bytes.Compare(k[:8], limit) < 0; k, _ = c.Next() {
		if len(victims) == batch {
			more = true
			break
		}
		s, err := bk.getStep(string(k[8:]))
		if err != nil {
			return 0, false, fmt.Errorf("step %s in expiry index: %w", k[8:], err)
		}
		victims = append(victims, s)
	}
	for _, s := range victims {
		if err := bk.expire(s, cutoff, now); err != nil {
			return 0, false, err
		}
	}
	return len(victims), more, nil
}

// expire removes one expirable step, with its event.
func (bk *buckets) expire(s *journal.Step, cutoff, now time.Time) error {
	if err := bk.deleteStep(s); err != nil {
		return err
	}
	if err := bk.appendEvent(expiredEvent(s, now)); err != nil {
		return err
	}
	if s.Workflow == "" {
		return nil
	}
	if err := bk.touchWorkflow(s.CredentialMAC, s.Workflow, s, nil, now); err != nil {
		return err
	}
	return bk.dropEmptyWorkflow(s.CredentialMAC, s.Workflow, cutoff)
}

// expiredEvent records the removal of the expired hold s.
func expiredEvent(s *journal.Step, now time.Time) journal.Event {
	return journal.Event{KeySeq: s.Revision + 1, Time: now, Key: s.Key, Type: journal.EventExpired,
		From: s.Status, To: s.Status, Reason: journal.ExpiredReason(s), Epoch: s.Epoch, Fence: s.Fence}
}
