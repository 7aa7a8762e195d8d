package flight

import (
	"sync"
	"time"
)

// Retries remembers when a caller last came back for a step that has no
// outcome yet, whatever it was answered (in-progress, 503, a hold): the
// background resolver leaves such a step to its caller. It holds only the
// keys of unfinished steps that were retried, and the resolver forgets
// those older than its cutoff on every pass. Its zero value is ready to
// use.
type Retries struct {
	mu sync.Mutex
	m  map[string]time.Time
}

// Touch records that key's caller came back at now.
func (r *Retries) Touch(key string, now time.Time) {
	r.mu.Lock()
	if r.m == nil {
		r.m = map[string]time.Time{}
	}
	r.m[key] = now
	r.mu.Unlock()
}

// Since reports whether key's caller came back after cutoff.
func (r *Retries) Since(key string, cutoff time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.m[key]
	return ok && t.After(cutoff)
}

// Forget drops the retries at or before cutoff.
func (r *Retries) Forget(cutoff time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, t := range r.m {
		if !t.After(cutoff) {
			delete(r.m, k)
		}
	}
}
