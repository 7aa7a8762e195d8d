package retention

import (
	"context"
	"log/slog"
	"time"

	"github.com/toolguard/toolguard/metrics"
)

// Batch bounds one sweep transaction.
const Batch = 500

// Journal is what the Sweeper needs of the journal (journal.Store).
type Journal interface {
	// Sweep removes up to limit finished steps last updated before
	// cutoff; more reports that some may be left.
	Sweep(cutoff time.Time, limit int) (n int, more bool, err error)
	// ExpireHolds removes up to limit holds for approval last updated
	// before cutoff; more reports that some may be left.
	ExpireHolds(cutoff time.Time, limit int) (n int, more bool, err error)
}

// Sweeper removes old steps and expired holds. Zero durations keep them
// forever.
type Sweeper struct {
	Journal    Journal
	Retention  time.Duration
	HoldExpiry time.Duration
	// Metrics counts what was removed; nil counts nothing.
	Metrics *metrics.Metrics
	Log     *slog.Logger
}

// Enabled reports whether the Sweeper has anything to remove.
func (s *Sweeper) Enabled() bool { return s.Retention > 0 || s.HoldExpiry > 0 }

// Interval is the default interval between passes: a tenth of the
// shortest duration, between 1s and 1m.
func (s *Sweeper) Interval() time.Duration {
	interval := time.Minute
	for _, d := range []time.Duration{s.Retention, s.HoldExpiry} {
		if d > 0 {
			interval = min(interval, max(d/10, time.Second))
		}
	}
	return interval
}

// Run runs a pass every interval until ctx ends, the first at once.
func (s *Sweeper) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		s.Pass(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Pass expires old holds and then sweeps old steps, in batches.
func (s *Sweeper) Pass(ctx context.Context) {
	if s.HoldExpiry > 0 {
		n, cutoff := s.drain(ctx, "hold expiry", s.HoldExpiry, s.Journal.ExpireHolds)
		s.Metrics.Expired(n)
		if n > 0 {
			s.log().Warn("holds for approval expired unapproved; removed, never sent", "removed", n, "cutoff", cutoff)
		}
	}
	if s.Retention > 0 {
		n, cutoff := s.drain(ctx, "retention sweep", s.Retention, s.Journal.Sweep)
		s.Metrics.Swept(n)
		if n > 0 {
			s.log().Info("retention sweep", "removed", n, "cutoff", cutoff)
		}
	}
}

// drain runs batches of remove, for what is older than age, until nothing
// is left or a batch removes nothing, and returns how many it removed.
func (s *Sweeper) drain(ctx context.Context, what string, age time.Duration, remove func(time.Time, int) (int, bool, error)) (int, time.Time) {
	cutoff := time.Now().Add(-age)
	total := 0
	for ctx.Err() == nil {
		n, more, err := remove(cutoff, Batch)
		if err != nil {
			s.log().Error(what, slog.Any("error", err))
			return total, cutoff
		}
		total += n
		// A batch that removed nothing ends the pass even when more may be
		// left: bbolt scans a bounded run of old entries per batch, and a
		// run of steps it must keep (retryable failures nobody retried)
		// would otherwise have the pass read it again and again.
		if !more || n == 0 {
			break
		}
	}
	return total, cutoff
}

func (s *Sweeper) log() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}
