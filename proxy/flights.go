package proxy

import (
	"sync"
	"time"

	"github.com/toolguard/toolguard/lifecycle"
)

// flight is a guarded call running in this process. It is live until its
// claim's lease ends plus the longest the call may take once sent (the
// upstream timeout and the time to record the outcome): after that a
// duplicate treats the call as interrupted, and the late owner's writes
// are refused by the journal's fencing. The owner never sends once the
// lease has ended (see sendlease.go).
type flight struct {
	done  chan struct{}
	lease *lifecycle.Lease
	after time.Duration
}

// deadline is when the flight stops being live.
func (fl *flight) deadline() time.Time { return fl.lease.Until().Add(fl.after) }

// flights registers the calls in flight by key. Registration happens inside
// the journal mutation that claims the step, so a duplicate that reads the
// step as started always finds the flight; it is idempotent (reserve), as a
// mutation may run more than once, and released after Apply unless the
// claim was written.
type flights struct {
	mu sync.Mutex
	m  map[string]*flight
}

func newFlights() *flights { return &flights{m: map[string]*flight{}} }

// live returns the key's flight if its lease has not ended.
func (f *flights) live(key string, now time.Time) *flight {
	f.mu.Lock()
	defer f.mu.Unlock()
	fl := f.m[key]
	if fl == nil || now.After(fl.deadline()) {
		return nil
	}
	return fl
}

// liveOther is live, except that it ignores mine (the caller's own
// flight, registered by an earlier run of its mutation).
func (f *flights) liveOther(key string, now time.Time, mine *flight) *flight {
	fl := f.live(key, now)
	if fl == mine {
		return nil
	}
	return fl
}

// reserve registers a flight for key, replacing an expired one, and
// returns it; when mine is still the key's flight it is returned as it is,
// so a mutation that runs again registers nothing new. When another call's
// flight of key is live, nothing is registered and that flight is
// returned as other: two calls of one process never both claim a key,
// whatever their journal reads said (an optimistic journal lets both read
// "no step" before either writes).
func (f *flights) reserve(key string, mine *flight, now time.Time, lease *lifecycle.Lease, after time.Duration) (fl, other *flight) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cur := f.m[key]
	switch {
	case mine != nil && cur == mine:
		return mine, nil
	case cur != nil && !now.After(cur.deadline()):
		return nil, cur
	}
	fl = &flight{done: make(chan struct{}), lease: lease, after: after}
	f.m[key] = fl
	return fl, nil
}

// finish ends fl and wakes its waiters.
func (f *flights) finish(key string, fl *flight) {
	f.mu.Lock()
	if f.m[key] == fl {
		delete(f.m, key)
	}
	f.mu.Unlock()
	close(fl.done)
}

// count reports the calls in flight.
func (f *flights) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.m)
}
