package proxy

import (
	"time"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/rules"
)

// When an interrupted attempt can no longer land.
//
// A lookup's "absent" is trusted only once the step's last attempt cannot
// still reach the provider: the last moment its owner could have written
// it (the end of its claim's lease, see package wirewatch) plus the longest
// send it allowed (the upstream timeout, or the route's lookup.settle when
// the provider's search lags longer). The same bound warns an operator who
// resolves such a step as not executed.
//
// The lease's end is known on the journal's clock where leases are shared
// (PostgreSQL: LeaseUntil, compared with the read's ReadAt; a takeover
// records the old lease's bound in SettlesAt, since the new claim replaces
// LeaseUntil). A journal of one process (bbolt) keeps leases in memory: a
// step of this process is bounded by its flight (a duplicate waits while
// it is live); one of an earlier process by that process's lease, and no
// later than this process's start, since the earlier one had exited by
// then.

// settle reports until when st's last attempt may still land at the
// provider, and the time to compare it with, on the same clock.
func (s *Server) settle(st *journal.Step) (until, now time.Time) {
	lands := s.landing(s.routeOf(st.API, st.Route))
	now = s.now()
	var end time.Time
	switch {
	case !st.LeaseUntil.IsZero():
		end, now = st.LeaseUntil, st.ReadAt
		if now.IsZero() {
			now = s.now()
		}
	case st.Epoch != s.journal.Epoch():
		end = st.UpdatedAt.Add(s.opts.Lease)
		if s.started.Before(end) {
			end = s.started
		}
	default:
		end = st.UpdatedAt
	}
	until = end.Add(lands)
	if st.SettlesAt.After(until) {
		until = st.SettlesAt
	}
	return until, now
}

// settling reports whether st's last attempt may still land.
func (s *Server) settling(st *journal.Step) bool {
	until, now := s.settle(st)
	return now.Before(until)
}

// settlesIn is how long until st's last attempt can no longer land; zero
// when it cannot any more.
func (s *Server) settlesIn(st *journal.Step) time.Duration {
	until, now := s.settle(st)
	return max(until.Sub(now), 0)
}

// landing is the longest an attempt of r may take to land once written.
func (s *Server) landing(r *rules.Route) time.Duration {
	return max(s.opts.UpstreamTimeout, lookupSettle(r))
}

// Settle is settle for the admin API (admin.Proxy): until when st's last
// attempt may still land, and now on the same clock.
func (s *Server) Settle(st *journal.Step) (until, now time.Time) { return s.settle(st) }
