package proxy

import (
	"time"

	"github.com/toolguard/toolguard/retention"
)

// StartSweeper removes, every interval (zero: the sweeper's default), in
// small batches, until Close: finished steps older than the retention,
// and holds for approval that nobody approved within the hold expiry (see
// package retention). It does nothing when both are zero (keep forever).
func (s *Server) StartSweeper(interval time.Duration) {
	sw := s.sweeper()
	if !sw.Enabled() {
		return
	}
	if interval <= 0 {
		interval = sw.Interval()
	}
	s.bgWork.Add(1)
	go func() {
		defer s.bgWork.Done()
		sw.Run(s.bg, interval)
	}()
}

func (s *Server) sweeper() *retention.Sweeper {
	return &retention.Sweeper{Journal: s.journal, Retention: s.opts.Retention, HoldExpiry: s.opts.HoldExpiry, Metrics: s.metrics, Log: s.log}
}
