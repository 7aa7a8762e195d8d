package bolt

import (
	"bytes"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/toolguard/toolguard/journal"
)

// Walks in update-time order.
//
// Within one status the status index is in update-time order, so a walk of
// several statuses by time is a merge of their ranges: one cursor per
// status, and the next entry is the oldest (or newest) of their heads.
// There are five statuses, so picking the head is a short scan.

// statusHead is one status's cursor in a merge.
type statusHead struct {
	c   *bbolt.Cursor
	pre byte
	k   []byte // current entry; nil when the range is done
}

// byTime calls fn with the update time (8 bytes, as in timeBytes) and the
// step key of every entry of the given statuses, oldest first or newest
// first, until fn returns false or an error.
func (bk *buckets) byTime(statuses []journal.Status, newest bool, fn func(t, key []byte) (bool, error)) error {
	heads := make([]*statusHead, 0, len(statuses))
	for _, s := range statuses {
		h := &statusHead{c: bk.byStatus.Cursor(), pre: byte(s)}
		if newest {
			h.last()
		} else {
			h.k, _ = h.c.Seek([]byte{h.pre})
			h.check()
		}
		heads = append(heads, h)
	}
	for {
		var next *statusHead
		for _, h := range heads {
			switch {
			case h.k == nil:
			case len(h.k) < 10:
				return fmt.Errorf("%w: status index key %x", journal.ErrCorrupt, h.k)
			case next == nil || before(h.k[1:9], next.k[1:9], newest):
				next = h
			}
		}
		if next == nil {
			return nil
		}
		if more, err := fn(next.k[1:9], next.k[9:]); !more || err != nil {
			return err
		}
		if newest {
			next.k, _ = next.c.Prev()
		} else {
			next.k, _ = next.c.Next()
		}
		next.check()
	}
}

// before reports whether time a comes before time b in the walk's order.
func before(a, b []byte, newest bool) bool {
	if newest {
		return bytes.Compare(a, b) > 0
	}
	return bytes.Compare(a, b) < 0
}

// last positions h on the last entry of its status.
func (h *statusHead) last() {
	if k, _ := h.c.Seek([]byte{h.pre + 1}); k == nil {
		h.k, _ = h.c.Last()
	} else {
		h.k, _ = h.c.Prev()
	}
	h.check()
}

// check ends h when its cursor has left its status's range.
func (h *statusHead) check() {
	if h.k != nil && h.k[0] != h.pre {
		h.k = nil
	}
}

// allStatuses are the statuses a step can be stored with.
var allStatuses = []journal.Status{journal.StatusPrepared, journal.StatusStarted, journal.StatusCommitted, journal.StatusVerified, journal.StatusFailed}
