package proxy

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/metrics"
)

// journalHealth records whether the proxy's journal writes succeed. After
// a failed write the proxy is not ready (GET /readyz answers 503) until a
// later write succeeds: every guarded call tries the journal before it is
// sent, so the first one recorded after the cause is fixed (a disk with
// room again) makes the proxy ready again. There is no probe write.
type journalHealth struct {
	// failedAt is the time of the last write failure, in Unix nanoseconds,
	// when no write succeeded since; zero when healthy.
	failedAt atomic.Int64
	// probedAt is when Ready last probed the journal, in Unix nanoseconds.
	probedAt atomic.Int64
	metrics  *metrics.Metrics
	log      *slog.Logger
}

// healthRecordingStore is a journal.Store whose Apply results are recorded in a
// journalHealth: every journal write of the proxy goes through it.
type healthRecordingStore struct {
	journal.Store
	h *journalHealth
}

// Apply implements journal.Store, recording whether the journal could write.
func (j healthRecordingStore) Apply(ctx context.Context, key string, m journal.Mutation) (journal.Step, error) {
	var merr error
	st, err := j.Store.Apply(ctx, key, func(cur *journal.Step) (journal.Change, error) {
		ch, err := m(cur)
		merr = err // read after Apply returned, which orders it
		return ch, err
	})
	j.h.record(err, merr)
	return st, err
}

// record classifies one Apply result: err is what Apply returned, merr
// what the mutation returned. A mutation's own answer (no change, fenced,
// not held), a cancelled caller and a refused change say nothing about
// the disk.
func (h *journalHealth) record(err, merr error) {
	switch {
	case err == nil && merr == nil:
		if h.failedAt.Swap(0) != 0 {
			h.log.Info("journal writes succeed again: ready")
		}
	case err == nil, merr != nil && errors.Is(err, merr),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, journal.ErrFenced), errors.Is(err, journal.ErrNotFound), errors.Is(err, journal.ErrInvalidChange):
	default:
		h.metrics.JournalWriteFailed()
		if h.failedAt.Swap(time.Now().UnixNano()) == 0 {
			h.log.Error("journal write failed: not ready until a journal write succeeds", slog.Any("error", err))
		}
	}
}

// Ready reports whether the proxy can take guarded calls: false after a
// journal write failed, until a later one succeeds or the journal answers
// a probe (Store.Ping, at most once a second), so that readiness comes
// back by itself when the disk or the database does, traffic or not. The
// admin API's /readyz asks it (admin.Proxy).
func (s *Server) Ready() bool {
	if s.health.failedAt.Load() == 0 {
		return true
	}
	now := time.Now().UnixNano()
	last := s.health.probedAt.Load()
	if now-last < int64(time.Second) || !s.health.probedAt.CompareAndSwap(last, now) {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.opts.Journal.Ping(ctx); err != nil {
		return false
	}
	if s.health.failedAt.Swap(0) != 0 {
		s.health.log.Info("journal answers again: ready")
	}
	return true
}
