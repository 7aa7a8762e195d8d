package proxy

import (
	"log/slog"
	"time"
)

// sweepBatch bounds one sweep transaction, so requests never wait long
// behind it.
const sweepBatch = 500

// StartSweeper removes finished steps older than the retention every
// interval, in small batches, until Close. It does nothing when the
// retention is zero (keep forever).
func (s *Server) StartSweeper(interval time.Duration) {
	if s.opts.Retention <= 0 {
		return
	}
	if interval <= 0 {
		interval = min(max(s.opts.Retention/10, time.Second), time.Minute)
	}
	s.bgWork.Add(1)
	go func() {
		defer s.bgWork.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
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
	cutoff := time.Now().Add(-s.opts.Retention)
	total := 0
	for s.bg.Err() == nil {
		n, more, err := s.journal.Sweep(cutoff, sweepBatch)
		if err != nil {
			s.log.Error("retention sweep", slog.Any("error", err))
			return
		}
		total += n
		if !more {
			break
		}
	}
	s.metrics.Swept(total)
	if total > 0 {
		s.log.Info("retention sweep", "removed", total, "cutoff", cutoff)
	}
}
