package flight

import (
	"sync"
	"time"

	"github.com/toolguard/toolguard/lifecycle"
)

// Flight is a guarded call running in this process. It is live until its
// claim's lease ends plus the longest the call may take once sent (the
// upstream timeout and the time to record the outcome): after that a
// duplicate treats the call as interrupted, and the late owner's writes
// are refused by the journal's fencing. The owner never sends once the
// lease has ended (see package wirewatch).
type Flight struct {
	done  chan struct{}
	lease *lifecycle.Lease
	after time.Duration
}

// Done is closed when the flight is finished.
func (fl *Flight) Done() <-chan struct{} { return fl.done }

// Lease is the claim's lease the flight was reserved with.
func (fl *Flight) Lease() *lifecycle.Lease { return fl.lease }

// deadline is when the flight stops being live.
func (fl *Flight) deadline() time.Time { return fl.lease.Until().Add(fl.after) }

// Table registers the calls in flight by key. Registration happens inside
// the journal mutation that claims the step, so a duplicate that reads the
// step as started always finds the flight; it is idempotent (Reserve), as
// a mutation may run more than once, and released after Apply unless the
// claim was written. Make one with NewTable.
type Table struct {
	mu sync.Mutex
	m  map[string]*Flight
}

// NewTable returns an empty table.
func NewTable() *Table { return &Table{m: map[string]*Flight{}} }

// Live returns the key's flight if its lease has not ended; nil when there
// is none.
func (t *Table) Live(key string, now time.Time) *Flight {
	t.mu.Lock()
	defer t.mu.Unlock()
	fl := t.m[key]
	if fl == nil || now.After(fl.deadline()) {
		return nil
	}
	return fl
}

// LiveOther is Live, except that it ignores mine (the caller's own
// flight, registered by an earlier run of its mutation).
func (t *Table) LiveOther(key string, now time.Time, mine *Flight) *Flight {
	fl := t.Live(key, now)
	if fl == mine {
		return nil
	}
	return fl
}

// Reserve registers a flight for key, replacing an expired one, and
// returns it; when mine is still the key's flight it is returned as it is,
// so a mutation that runs again registers nothing new. When another call's
// flight of key is live, nothing is registered and that flight is
// returned as other: two calls of one process never both claim a key,
// whatever their journal reads said (an optimistic journal lets both read
// "no step" before either writes). The flight is live until lease's end
// plus after.
func (t *Table) Reserve(key string, mine *Flight, now time.Time, lease *lifecycle.Lease, after time.Duration) (fl, other *Flight) {
	t.mu.Lock()
	defer t.mu.Unlock()
	cur := t.m[key]
	switch {
	case mine != nil && cur == mine:
		return mine, nil
	case cur != nil && !now.After(cur.deadline()):
		return nil, cur
	}
	fl = &Flight{done: make(chan struct{}), lease: lease, after: after}
	t.m[key] = fl
	return fl, nil
}

// Finish ends fl and wakes its waiters. It must be called once per flight
// Reserve registered.
func (t *Table) Finish(key string, fl *Flight) {
	t.mu.Lock()
	if t.m[key] == fl {
		delete(t.m, key)
	}
	t.mu.Unlock()
	close(fl.done)
}

// Count reports the calls in flight, live or not yet finished.
func (t *Table) Count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}
