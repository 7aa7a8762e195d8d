package lifecycle

import (
	"sync"
	"time"
)

// A claim lasts for its lease on the journal's clock (the database's on
// PostgreSQL), counted from when the journal wrote it. This process cannot
// read that clock, so it keeps its own view of the lease: on the monotonic
// clock, from the moment just before the claim statement went out,
// shortened by a margin for the local clock's rate. That end is never
// later than the journal's, however late the acknowledgement arrives. How
// the proxy holds a send to it is package internal/wirewatch.

// Lease is a claim's lease as this process measures it.
type Lease struct {
	mu  sync.Mutex
	end time.Time // monotonic
}

// leaseMargin is what is taken off a lease for the local clock's rate:
// 2%, at least 10ms.
func leaseMargin(d time.Duration) time.Duration { return max(d/50, 10*time.Millisecond) }

// NewLease is a lease of d counted from sent, the moment before the
// claim statement went out.
func NewLease(sent time.Time, d time.Duration) *Lease {
	l := &Lease{}
	l.Extend(sent, d)
	return l
}

// Extend moves the lease's end to sent+d (less the margin) when that is
// later: sent is the moment a renewal the journal accepted went out.
func (l *Lease) Extend(sent time.Time, d time.Duration) {
	end := sent.Add(d - leaseMargin(d))
	l.mu.Lock()
	if end.After(l.end) {
		l.end = end
	}
	l.mu.Unlock()
}

// Until is the lease's end; the zero time for a nil lease (never ends).
func (l *Lease) Until() time.Time {
	if l == nil {
		return time.Time{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.end
}

// Holds reports whether the lease still runs at now. A nil lease always
// holds.
func (l *Lease) Holds(now time.Time) bool {
	if l == nil {
		return true
	}
	return now.Before(l.Until())
}
