package journalhealth

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/metrics"
)

// Monitor records whether the proxy's journal writes succeed. After a
// failed write the proxy is not ready (GET /readyz answers 503) until a
// later write succeeds: every guarded call tries the journal before it is
// sent, so the first one recorded after the cause is fixed (a disk with
// room again) makes the proxy ready again. There is no probe write. Its
// zero value is healthy.
type Monitor struct {
	// Metrics counts the write failures; nil counts nothing.
	Metrics *metrics.Metrics
	// Log receives a line when readiness is lost or comes back; nil
	// discards.
	Log *slog.Logger

	// failedAt is the time of the last write failure, in Unix nanoseconds,
	// when no write succeeded since; zero when healthy.
	failedAt atomic.Int64
	// probedAt is when Ready last probed the journal, in Unix nanoseconds.
	probedAt atomic.Int64
}

// Recording returns store with the results of its Apply recorded in m:
// every journal write of the proxy goes through it.
func (m *Monitor) Recording(store journal.Store) journal.Store {
	return recordingStore{Store: store, m: m}
}

// recordingStore is a journal.Store whose Apply results are recorded in a
// Monitor.
type recordingStore struct {
	journal.Store
	m *Monitor
}

// Apply implements journal.Store, recording whether the journal could write.
func (j recordingStore) Apply(ctx context.Context, key string, m journal.Mutation) (journal.Step, error) {
	var merr error
	st, err := j.Store.Apply(ctx, key, func(cur *journal.Step) (journal.Change, error) {
		ch, err := m(cur)
		merr = err // read after Apply returned, which orders it
		return ch, err
	})
	j.m.Record(err, merr)
	return st, err
}

// Record classifies one Apply result: err is what Apply returned, merr
// what the mutation returned. A mutation's own answer (no change, fenced,
// not held), a cancelled caller and a refused change say nothing about
// the disk.
func (m *Monitor) Record(err, merr error) {
	switch {
	case err == nil && merr == nil:
		if m.failedAt.Swap(0) != 0 {
			m.log().Info("journal writes succeed again: ready")
		}
	case err == nil, merr != nil && errors.Is(err, merr),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, journal.ErrFenced), errors.Is(err, journal.ErrNotFound), errors.Is(err, journal.ErrInvalidChange):
	default:
		m.Metrics.JournalWriteFailed()
		if m.failedAt.Swap(time.Now().UnixNano()) == 0 {
			m.log().Error("journal write failed: not ready until a journal write succeeds", slog.Any("error", err))
		}
	}
}

// Pinger is the journal as Ready probes it (journal.Store's Ping).
type Pinger interface {
	// Ping reports whether the journal answers.
	Ping(ctx context.Context) error
}

// Ready reports whether the journal can take writes: false after a write
// failed, until a later one succeeds or j answers a probe (at most once a
// second, within 2 seconds).
func (m *Monitor) Ready(j Pinger) bool {
	if m.failedAt.Load() == 0 {
		return true
	}
	now := time.Now().UnixNano()
	last := m.probedAt.Load()
	if now-last < int64(time.Second) || !m.probedAt.CompareAndSwap(last, now) {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := j.Ping(ctx); err != nil {
		return false
	}
	if m.failedAt.Swap(0) != 0 {
		m.log().Info("journal answers again: ready")
	}
	return true
}

func (m *Monitor) log() *slog.Logger {
	if m.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return m.Log
}
