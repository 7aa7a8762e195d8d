package activity

import "sync"

// Counter counts work in progress. Unlike a sync.WaitGroup it can be
// waited on with a timeout (Idle is a channel) and bounded (TryAdd). Its
// zero value counts nothing; it is safe for concurrent use.
type Counter struct {
	mu   sync.Mutex
	n    int
	zero chan struct{}
}

// Add adds d, which may be negative, to the count. The count must not go
// below zero; adding zero changes nothing.
func (a *Counter) Add(d int) {
	if d == 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n == 0 && d > 0 {
		a.zero = make(chan struct{})
	}
	a.n += d
	if a.n == 0 && a.zero != nil {
		close(a.zero)
	}
}

// Done subtracts one from the count.
func (a *Counter) Done() { a.Add(-1) }

// TryAdd counts one more unit of work unless max are already counted; it
// reports whether it did.
func (a *Counter) TryAdd(max int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n >= max {
		return false
	}
	if a.n == 0 {
		a.zero = make(chan struct{})
	}
	a.n++
	return true
}

// Idle returns a channel closed when the count is zero: already closed
// when it is zero now, else closed when it drops to zero.
func (a *Counter) Idle() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n == 0 {
		c := make(chan struct{})
		close(c)
		return c
	}
	return a.zero
}
