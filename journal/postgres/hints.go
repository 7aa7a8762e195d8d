package postgres

import (
	"sync"
	"time"

	"github.com/toolguard/toolguard/journal"
)

// Hints.
//
// A guarded call makes three journal calls: Get (is there a step?), the
// claim, and the outcome. If Apply read the step before each write, the
// call would cost five round trips, yet the state Apply would read is
// usually known already: Get has just found no step, or this journal has
// just written it. So the journal remembers, for a short time, what it
// last read or wrote of a key (a hint), and Apply runs the mutation on
// the hint and sends the write at once, conditional on the hint: an
// INSERT that does nothing when a row exists, or an UPDATE of the
// revision the hint carries.
//
// The database confirms or refutes every hint. A write that matches no row
// has written nothing, and Apply reads and runs the mutation again, as it
// does after any lost race. A mutation that does not write on a hint
// (journal.ErrNoChange, a fenced or any other error: an answer its caller
// would act on) is run again on a fresh read too. So a decision is only
// ever acted on when it was made on the state the database holds. A stale
// hint costs one round trip, never a wrong answer.
//
// Clock. A hint's step carries ReadAt, and prepare stamps the change with
// a time. The time used is the database's clock when the hint was read or
// written, plus the local monotonic time since then. That is never later
// than the database's clock now, so lease checks made on a hint (has the
// lease lapsed?) err on the side of "not yet", which writes nothing and is
// then decided on a fresh read.
//
// Revisions are not reused while a hint lives: a step is deleted only by
// Sweep (terminal steps past retention) and ExpireHolds (expired holds), a
// hint lives hintTTL at most, and both clear this journal's hints. Steps
// with a stored response are not hinted: they are rarely written again, and
// their bodies would make the hints large.
type hints struct {
	mu sync.Mutex
	m  map[string]hint
}

// hint is what the journal knew of a key: step nil means no step.
type hint struct {
	step  *journal.Step
	db    time.Time // the database's clock at the read or write
	local time.Time // the local clock then, with its monotonic reading
}

const (
	// hintTTL bounds how long a hint is trusted; a claim's outcome
	// arrives within the upstream call's time.
	hintTTL = 30 * time.Second
	// maxHints bounds the map: about what the calls in flight need.
	maxHints = 4096
)

// now is the database's clock as the hint estimates it, never later
// than the real one.
func (h hint) now() time.Time { return h.db.Add(time.Since(h.local)) }

// put remembers the state of key: st (copied) or, when nil, no step.
func (hs *hints) put(key string, st *journal.Step, db time.Time) {
	if st != nil && st.Response != nil {
		hs.drop(key)
		return
	}
	h := hint{db: db, local: time.Now()}
	if st != nil {
		c := *st
		h.step = &c
	}
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.m == nil {
		hs.m = make(map[string]hint)
	}
	if _, ok := hs.m[key]; !ok && len(hs.m) >= maxHints {
		hs.evict()
	}
	hs.m[key] = h
}

// evict removes the expired hints, or one hint when none is expired.
func (hs *hints) evict() {
	n := len(hs.m)
	for k, h := range hs.m {
		if time.Since(h.local) > hintTTL {
			delete(hs.m, k)
		}
	}
	if len(hs.m) < n {
		return
	}
	for k := range hs.m {
		delete(hs.m, k)
		return
	}
}

// take returns the hint of key and forgets it; ok is false when there is
// none, or it has expired.
func (hs *hints) take(key string) (h hint, ok bool) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	h, ok = hs.m[key]
	if !ok {
		return hint{}, false
	}
	delete(hs.m, key)
	if time.Since(h.local) > hintTTL {
		return hint{}, false
	}
	return h, true
}

func (hs *hints) drop(key string) {
	hs.mu.Lock()
	delete(hs.m, key)
	hs.mu.Unlock()
}

// clear forgets every hint: steps were deleted.
func (hs *hints) clear() {
	hs.mu.Lock()
	clear(hs.m)
	hs.mu.Unlock()
}
