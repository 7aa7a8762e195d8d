package observe

import (
	"context"
	"log/slog"
	"sync"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/metrics"
)

// Journal is the journal as observations use it: read without a claim
// when a call arrives, written once it has ended. journal.Store
// implements it.
type Journal interface {
	// Get returns key's step, or an error wrapping journal.ErrNotFound.
	Get(key string) (journal.Step, error)
	// Apply runs m on key's step and commits its change durably; see
	// journal.Store.
	Apply(ctx context.Context, key string, m journal.Mutation) (journal.Step, error)
}

// Metrics counts observed calls; *metrics.Metrics implements it.
type Metrics interface {
	// Request counts a call by API, route label and outcome.
	Request(api, route, outcome string)
	// Observed counts an observed call by what enforcement would have
	// done with it.
	Observed(api, route string, would journal.Would)
}

var (
	_ Journal = journal.Store(nil)
	_ Metrics = (*metrics.Metrics)(nil)
)

// Recorder records the observations of one proxy: it starts them, keeps
// those the journal does not show yet, and writes each in the background
// once its call has ended. Make one with NewRecorder.
type Recorder struct {
	journal Journal
	metrics Metrics
	log     *slog.Logger
	pending pending
	writes  writes
}

// NewRecorder returns a Recorder that journals into j and counts into m
// (nil: nowhere); log takes the decision lines of observed calls and the
// journal writes that failed (nil: discarded).
func NewRecorder(j Journal, m Metrics, log *slog.Logger) *Recorder {
	if m == nil {
		m = noMetrics{}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Recorder{journal: j, metrics: m, log: log}
}

// Idle returns a channel closed once no observation is in flight or
// waiting for its write: every observation that started before the call
// is then in the journal (or was lost to a journal error).
func (r *Recorder) Idle() <-chan struct{} { return r.pending.idle() }

// Wait returns once the journal writes of the observations that have
// ended are done. Calls still in flight are not waited for.
func (r *Recorder) Wait() { <-r.writes.idle() }

// write journals an ended observation in the background.
func (r *Recorder) write(key string, m journal.Mutation) {
	r.writes.add(1)
	go func() {
		defer r.writes.add(-1)
		defer r.pending.saved(key)
		if _, err := r.journal.Apply(context.Background(), key, m); err != nil {
			r.log.Warn("observation not journaled", slog.String(logKey, key), slog.Any("error", err))
		}
	}()
}

// writes counts the journal writes in progress; idle returns a channel
// closed when there are none. Unlike a sync.WaitGroup, it may be counted
// up while it is waited for.
type writes struct {
	mu   sync.Mutex
	n    int
	zero chan struct{}
}

func (w *writes) add(d int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n == 0 && d > 0 {
		w.zero = make(chan struct{})
	}
	w.n += d
	if w.n == 0 && w.zero != nil {
		close(w.zero)
		w.zero = nil
	}
}

func (w *writes) idle() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.zero == nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	return w.zero
}

// noMetrics counts nothing.
type noMetrics struct{}

func (noMetrics) Request(string, string, string)         {}
func (noMetrics) Observed(string, string, journal.Would) {}
