package lookuprate

import (
	"sync"
	"time"

	"github.com/toolguard/toolguard/rules"
)

// Budget is the per-API token bucket of lookup.rate (rule files give all
// routes of an API one rate). Its zero value is ready to use; it is safe
// for concurrent use.
type Budget struct {
	mu      sync.Mutex
	buckets map[string]*tokenBucket
}

type tokenBucket struct {
	tokens float64
	last   time.Time
}

// Take spends one lookup of api's budget r at now; when the budget is
// spent it reports how long until the next token. A nil rate, or one of
// no lookups, is unlimited.
func (b *Budget) Take(api string, r *rules.Rate, now time.Time) (ok bool, wait time.Duration) {
	if r == nil || r.N <= 0 {
		return true, 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buckets == nil {
		b.buckets = make(map[string]*tokenBucket)
	}
	key := api + " " + r.String()
	tb := b.buckets[key]
	if tb == nil {
		tb = &tokenBucket{tokens: float64(r.N), last: now}
		b.buckets[key] = tb
	}
	perToken := r.Per / time.Duration(r.N)
	if el := now.Sub(tb.last); el > 0 {
		tb.tokens = min(float64(r.N), tb.tokens+float64(el)/float64(perToken))
		tb.last = now
	}
	if tb.tokens >= 1 {
		tb.tokens--
		return true, 0
	}
	return false, time.Duration((1 - tb.tokens) * float64(perToken))
}
