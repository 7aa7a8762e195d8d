package observe

import (
	"sync"

	"github.com/toolguard/toolguard/journal"
)

// pending holds this process's observations that the journal does not
// show yet, by key: calls in flight, and the record of the latest call
// that ended, until its write is done (observations are journaled after
// the answer, in the background). An observed duplicate reads it before
// the journal, so that what enforcement would have done is decided on
// what happened, not on a write still on its way: a call in flight here
// would have been waited for, and an answered one replayed. The zero
// pending holds nothing and is ready to use.
type pending struct {
	mu sync.Mutex
	m  map[string]*observed
	// zero is closed when m becomes empty (see idle).
	zero chan struct{}
}

// observed is the state of one key's observations in this process.
type observed struct {
	inFlight int           // calls that have not ended
	unsaved  int           // ended calls whose record is not written yet
	rec      *journal.Step // the record the latest ended call writes; nil while none ended
}

// start counts a call of key in flight.
func (o *pending) start(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = map[string]*observed{}
	}
	if len(o.m) == 0 {
		o.zero = make(chan struct{})
	}
	e := o.m[key]
	if e == nil {
		e = &observed{}
		o.m[key] = e
	}
	e.inFlight++
}

// ended records that a call of key ended and will write rec (nil: it
// writes nothing).
func (o *pending) ended(key string, rec *journal.Step) {
	o.mu.Lock()
	defer o.mu.Unlock()
	e := o.m[key]
	if e == nil {
		return
	}
	e.inFlight--
	if rec != nil {
		e.rec = rec
		e.unsaved++
	}
	o.forget(key, e)
}

// saved records that the write of an ended call of key is done (or failed).
func (o *pending) saved(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if e := o.m[key]; e != nil {
		e.unsaved--
		o.forget(key, e)
	}
}

func (o *pending) forget(key string, e *observed) {
	if e.inFlight <= 0 && e.unsaved <= 0 {
		delete(o.m, key)
		if len(o.m) == 0 && o.zero != nil {
			close(o.zero)
			o.zero = nil
		}
	}
}

// idle returns a channel closed once no observation is in flight or
// waiting for its write: every observation that started before the call
// is then in the journal (or was lost to a journal error).
func (o *pending) idle() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.zero == nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	return o.zero
}

// view is what this process knows of key beyond the journal: whether a
// call of it is in flight, and the record not yet written (nil: none).
func (o *pending) view(key string) (inFlight bool, rec *journal.Step) {
	o.mu.Lock()
	defer o.mu.Unlock()
	e := o.m[key]
	if e == nil {
		return false, nil
	}
	if e.rec != nil {
		c := *e.rec
		rec = &c
	}
	return e.inFlight > 0, rec
}
