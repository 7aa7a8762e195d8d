package proxy

import (
	"log/slog"
	"time"
)

// sweepBatch bounds one sweep transaction, so requests never wait long
// behind it.
const sweepBatch = 500

// StartSweeper removes, every interval, in small batches, until Close:
// finished steps older than the retention, and holds for approval that
// nobody approved within the hold expiry (never sent: a retry is a new
// request). It does nothing when both are zero (keep forever).
func (s *Server) StartSweeper(interval time.Duration) {
	if s.opts.Retention <= 0 && s.opts.HoldExpiry <= 0 {
		return
	}
	if interval <= 0 {
		interval = time.Minute
		for _, d := range []time.Duration{s.opts.Retention, s.opts.HoldExpiry} {
			if d > 0 {
				interval = min(interval, max(d/10, time.Second))
			}
		}
	}
	s.bgWork.Add(1)
	go func() {
		defer s.bgWork.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			s.expireOnce()
			s.sweepOnce()
			select {
			case <-s.bg.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// sweepOnce runs batches until nothing old is left, yielding between them.
func (s *Server) sweepOnce() {
	if s.opts.Retention <= 0 {
		return
	}
	cutoff := time.Now().Add(-s.opts.Retention)
	total := 0
	for s.bg.Err() == nil {
		n, more, err := s.journal.Sweep(cutoff, sweepBatch)
		if err != nil {
			s.log.Error("retention sweep", slog.Any("error", err))
			return
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
	s.metrics.Swept(total)
	if total > 0 {
		s.log.Info("retention sweep", "removed", total, "cutoff", cutoff)
	}
}

// expireOnce removes the holds for approval older than the hold expiry,
// in batches.
func (s *Server) expireOnce() {
	if s.opts.HoldExpiry <= 0 {
		return
	}
	cutoff := time.Now().Add(-s.opts.HoldExpiry)
	total := 0
	for s.bg.Err() == nil {
		n, more, err := s.journal.ExpireHolds(cutoff, sweepBatch)
		if err != nil {
			s.log.Error("hold expiry", slog.Any("error", err))
			return
		}
		total += n
		if !more || n == 0 {
			break
		}
	}
	s.metrics.Expired(total)
	if total > 0 {
		s.log.Warn("holds for approval expired unapproved; removed, never sent", "removed", total, "cutoff", cutoff)
	}
}
