package proxy

import (
	"sync"
	"time"
)

// flight is a guarded call running in this process. Its lease ends at
// deadline: after that a duplicate treats the call as interrupted, and the
// late owner's writes are refused by the journal's fencing.
type flight struct {
	done     chan struct{}
	deadline time.Time
}

// flights registers the calls in flight by key. Registration happens inside
// the journal mutation that claims the step, so a duplicate that reads the
// step as started always finds the flight.
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
	if fl == nil || now.After(fl.deadline) {
		return nil
	}
	return fl
}

// start registers a new flight for key, replacing an expired one.
func (f *flights) start(key string, deadline time.Time) *flight {
	fl := &flight{done: make(chan struct{}), deadline: deadline}
	f.mu.Lock()
	f.m[key] = fl
	f.mu.Unlock()
	return fl
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
