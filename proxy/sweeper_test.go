package proxy

import (
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
)

// stuckSweeps is a journal whose sweeps and expiries remove nothing and
// say more may be left (up to 100 times, so that a regression fails
// instead of hanging), as bbolt's does when the oldest entries it scans in
// a batch are all steps it must keep.
type stuckSweeps struct {
	journal.Store
	sweeps, expiries int
}

func (s *stuckSweeps) Sweep(time.Time, int) (int, bool, error) {
	s.sweeps++
	return 0, s.sweeps < 100, nil
}

func (s *stuckSweeps) ExpireHolds(time.Time, int) (int, bool, error) {
	s.expiries++
	return 0, s.expiries < 100, nil
}

// Regression: a pass of the sweeper repeated Sweep for as long as it said
// "more", so a bbolt journal whose oldest 2000 finished steps were all to
// be kept (retryable failures nobody retried) had it rescan them in a
// tight loop of write transactions. A batch that removes nothing ends the
// pass; the next tick tries again.
func TestSweepPassEndsWithoutProgress(t *testing.T) {
	store := &stuckSweeps{Store: backends[0].open(t)}
	r := newProxyOn(t, store, time.Now, requiredRoute, &scriptedTransport{answers: []string{`{}`}},
		Options{Retention: time.Hour, HoldExpiry: time.Hour})
	r.srv.sweepOnce()
	r.srv.expireOnce()
	if store.sweeps != 1 || store.expiries != 1 {
		t.Fatalf("a pass ran %d sweeps and %d expiries, want 1 each", store.sweeps, store.expiries)
	}
}
