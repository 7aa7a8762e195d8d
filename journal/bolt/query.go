package bolt

import (
	"bytes"
	"encoding/json"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/toolguard/toolguard/journal"
)

// defaultLimit bounds List and Events when no limit is given.
const defaultLimit = 1000

// Get returns the step of key, or an error wrapping ErrNotFound.
// Steps read are cached (see cache.go).
func (b *Journal) Get(key string) (journal.Step, error) {
	if !b.closed.Load() {
		if s, ok := b.overlay.get(key); ok {
			s.ReadAt = b.now().UTC()
			return s, nil
		}
		if s, ok := b.cache.get(key); ok {
			s.ReadAt = b.now().UTC()
			return s, nil
		}
	}
	gen, cacheable := b.cache.generation()
	var s journal.Step
	err := b.rawView("get step "+key, func(bk *buckets) error {
		cur, err := bk.getStep(key)
		if err == nil {
			s = *cur
		}
		return err
	})
	if err == nil && cacheable {
		b.cache.put(gen, &s)
	}
	s.ReadAt = b.now().UTC()
	return s, err
}

// List returns the steps that match f, at most f.Limit (default 1000).
// Without a Status, Hold or Workflow filter it walks the status index by
// time and returns the most recently updated steps first. With one, it walks
// only that filter's index (the workflow's if set, else the hold's, else
// the status's) and returns steps in that index's order (key order, or
// least recently updated first for a status); the other filters are
// applied to the steps found. Filter{HoldSet: true} (steps not held) alone
// walks all steps by time. An empty result is a nil slice and no error.
func (b *Journal) List(f journal.Filter) ([]journal.Step, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = defaultLimit
	}
	var out []journal.Step
	now := b.now().UTC()
	err := b.view("list steps", func(bk *buckets) error {
		return bk.walk(f, func(key []byte) (bool, error) {
			s, err := bk.getStep(string(key))
			if err != nil {
				return false, fmt.Errorf("step %s in index: %w", key, err)
			}
			if matches(&f, s) {
				s.ReadAt = now
				out = append(out, *s)
			}
			return len(out) < limit, nil
		})
	})
	return out, err
}

// matches reports whether f selects s.
func matches(f *journal.Filter, s *journal.Step) bool {
	return (f.Status == journal.StatusUnknown || s.Status == f.Status) &&
		(!(f.HoldSet || f.Hold != journal.HoldNone) || s.Hold == f.Hold) &&
		(f.Workflow == "" || s.Workflow == f.Workflow) &&
		(!f.VerifyPending || !s.VerifyBy.IsZero())
}

// walk calls fn with the step keys of the index that best serves f, until
// fn returns false or an error.
func (bk *buckets) walk(f journal.Filter, fn func(key []byte) (bool, error)) error {
	var idx *bbolt.Bucket
	var prefix []byte
	skip := 0 // bytes between the prefix and the step key
	switch {
	case f.VerifyPending:
		c := bk.byVerify.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			if len(k) <= 8 {
				return fmt.Errorf("%w: verify index key %x", journal.ErrCorrupt, k)
			}
			if more, err := fn(k[8:]); !more || err != nil {
				return err
			}
		}
		return nil
	case f.Workflow != "":
		idx, prefix = bk.byWorkflow, workflowPrefix(f.Workflow)
	case f.Hold != journal.HoldNone:
		idx, prefix = bk.byHold, []byte{byte(f.Hold)}
	case f.Status != journal.StatusUnknown:
		idx, prefix, skip = bk.byStatus, []byte{byte(f.Status)}, 8 // the update time
	default:
		return bk.byTime(allStatuses, true, func(_, key []byte) (bool, error) { return fn(key) })
	}
	c := idx.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if len(k) <= len(prefix)+skip {
			return fmt.Errorf("%w: index key %x", journal.ErrCorrupt, k)
		}
		if more, err := fn(k[len(prefix)+skip:]); !more || err != nil {
			return err
		}
	}
	return nil
}

// Events returns up to limit events with seq > after, in seq order; limit
// 0 or less means 1000. An empty result is a nil slice and no error.
func (b *Journal) Events(after uint64, limit int) ([]journal.Event, error) {
	if limit <= 0 {
		limit = defaultLimit
	}
	if after == ^uint64(0) {
		return nil, nil
	}
	var out []journal.Event
	err := b.view("list events", func(bk *buckets) error {
		c := bk.events.Cursor()
		for k, v := c.Seek(seqKey(after + 1)); k != nil && len(out) < limit; k, v = c.Next() {
			var e journal.Event
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("%w: decode event %x: %v", journal.ErrCorrupt, k, err)
			}
			out = append(out, e)
		}
		return nil
	})
	return out, err
}

// LastSeq returns the seq of the latest event; 0 when there is none.
func (b *Journal) LastSeq() (uint64, error) {
	var seq uint64
	err := b.view("read last event seq", func(bk *buckets) error {
		seq = bk.events.Sequence()
		return nil
	})
	return seq, err
}

// Count returns the numbers of steps by status and by hold. It reads
// counters kept in the meta bucket, so its cost does not depend on the size
// of the journal.
func (b *Journal) Count() (journal.Counts, error) {
	c := journal.Counts{Status: map[journal.Status]int{}, Hold: map[journal.Hold]int{}}
	err := b.view("count steps", func(bk *buckets) error {
		for s := journal.StatusPrepared; s <= journal.StatusFailed; s++ {
			n := int(getUint(bk.meta, countKey(keyCountStatus, byte(s))))
			c.Status[s] = n
			c.Steps += n
		}
		for h := journal.HoldNone; h <= journal.HoldNeedsReview; h++ {
			c.Hold[h] = int(getUint(bk.meta, countKey(keyCountHold, byte(h))))
		}
		return nil
	})
	return c, err
}

// CountOpen returns the numbers of started and held steps, from the same
// counters as Count.
func (b *Journal) CountOpen() (journal.OpenCounts, error) {
	c, err := b.Count()
	o := journal.NewOpenCounts()
	o.Started = c.Status[journal.StatusStarted]
	for h := range o.Held {
		o.Held[h] = c.Hold[h]
	}
	return o, err
}

// ForEach calls fn with every step, in the order their keys were first
// written, inside one read transaction (a consistent snapshot); it stops at
// fn's first error.
func (b *Journal) ForEach(fn func(journal.Step) error) error {
	return b.view("walk steps", func(bk *buckets) error {
		return bk.forEachStep(func(seq []byte, s *journal.Step, err error) error {
			if err != nil {
				return fmt.Errorf("%w: step record %x: %v", journal.ErrCorrupt, seq, err)
			}
			return fn(*s)
		})
	})
}
