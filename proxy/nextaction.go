package proxy

import (
	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/lifecycle"
	"github.com/toolguard/toolguard/rules"
)

// NextAction says what is safe to do about st now, from the same recovery
// table the proxy decides calls with (lifecycle.Decide); "" when nothing is left to
// do. The admin API's resume packet (admin.Recovery) asks it for every
// step of a workflow.
func (s *Server) NextAction(st *journal.Step) string {
	now := s.now()
	route := s.routeOf(st.API, st.Route)
	sit := lifecycle.Situation{Step: st, BodyHash: st.BodyHash, MaxAttempts: s.opts.MaxAttempts,
		InFlight: s.flights.Live(st.Key, now) != nil || lifecycle.InFlightElsewhere(st, s.journal.Epoch()), Settling: s.settling(st)}
	if route != nil {
		sit.Strategy, sit.HasLookup = lifecycle.RecoveryOf(route, lifecycle.MissingLookupRefs(route, st))
		sit.Effect, sit.Approval = route.Effect, route.ApprovalRequired
		sit.NativeExpired = lifecycle.NativeExpired(route, st, now)
		sit.Backoff = lifecycle.Backoff(st, now)
	} else {
		sit.Effect = rules.EffectIrreversible
	}
	name := st.Route
	d := lifecycle.Decide(sit)
	switch d.Action {
	case lifecycle.ActionBlock, lifecycle.ActionHold:
		switch d.Reason {
		case lifecycle.ReasonApproval:
			return "wait: approval of " + name + " pending"
		case lifecycle.ReasonBudget:
			return "wait: " + name + " is over its route's budget; an operator may approve it"
		case lifecycle.ReasonVersionChanged:
			return "operator review needed: " + name + " held after a prompt/policy version change"
		case lifecycle.ReasonNotVisible:
			return "operator review needed: " + name + " effect not visible"
		case lifecycle.ReasonRetryBudget:
			return "operator review needed: " + name + " failed on every attempt"
		case lifecycle.ReasonAbandoned:
			return "operator review needed: " + name + " was interrupted and nobody retried it; outcome unknown"
		}
		return "operator review needed: " + name + " outcome unknown"
	case lifecycle.ActionWait:
		return "wait: " + name + " in flight"
	case lifecycle.ActionSettle:
		return "wait: " + name + " may still be landing at the provider"
	case lifecycle.ActionLookup:
		return "retry " + name + ": toolguard asks the provider first and does not re-send if it took effect"
	case lifecycle.ActionForward:
		switch {
		case st.Status == journal.StatusStarted && sit.Strategy == lifecycle.StrategyNative:
			return "retry " + name + ": provider dedupes on the key"
		case st.Status == journal.StatusStarted:
			return "retry " + name + ": reversible route, it will be re-sent"
		case st.Status == journal.StatusFailed:
			return "retry " + name + ": failed before taking effect, safe to retry"
		}
		return "retry " + name + ": approved, not sent yet"
	}
	if sit.Backoff {
		return "wait: " + name + " failed, and the provider asked to wait before a retry (Retry-After)"
	}
	if st.Status == journal.StatusCommitted && !st.VerifyBy.IsZero() {
		return "wait: verification of " + name + " pending"
	}
	return ""
}
