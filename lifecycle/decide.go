package lifecycle

import (
	"fmt"
	"strings"
	"time"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/rules"
)

// Strategy is how an interrupted call of a route can be resolved.
type Strategy uint8

const (
	// StrategyNone: neither native idempotency nor a lookup.
	StrategyNone Strategy = iota
	// StrategyNative: the provider dedupes on the key; re-send it.
	StrategyNative
	// StrategyLookup: ask the provider whether the call took effect.
	StrategyLookup
)

var strategyNames = [...]string{"none", "native", "lookup"}

func (s Strategy) String() string { return strategyNames[s] }

// LookupAnswer is what a lookup said about an interrupted call.
type LookupAnswer uint8

const (
	LookupNotAsked LookupAnswer = iota
	LookupFound
	LookupAbsent
	LookupUnknown
	// LookupThrottled: the API's lookup.rate budget is spent, so the
	// provider was not asked; never taken for absent.
	LookupThrottled
)

var lookupNames = [...]string{"not_asked", "found", "absent", "unknown", "throttled"}

func (a LookupAnswer) String() string { return lookupNames[a] }

// Action is what the pipeline does with an arriving request.
type Action uint8

const (
	// ActionForward sends the request upstream after claiming the step.
	ActionForward Action = iota + 1
	// ActionReplay answers from the stored outcome.
	ActionReplay
	// ActionWait waits for the call in flight in this process.
	ActionWait
	// ActionLookup asks the provider before deciding.
	ActionLookup
	// ActionRecordFound records the lookup's evidence as the outcome.
	ActionRecordFound
	// ActionHold puts the step on hold and answers with a problem.
	ActionHold
	// ActionBlock answers with a problem; the step is already held.
	ActionBlock
	// ActionMismatch answers payload-mismatch; nothing changes.
	ActionMismatch
	// ActionSettle answers in-progress: an interrupted attempt may still
	// land at the provider, so a lookup's "absent" is not final yet.
	ActionSettle
)

var actionNames = [...]string{"", "forward", "replay", "wait", "lookup", "record_found", "hold", "block", "mismatch", "settle"}

func (a Action) String() string { return actionNames[a] }

// Hold reasons, stored in Step.HoldReason.
const (
	ReasonApproval        = "approval_required"
	ReasonOutcomeUnknown  = "outcome_unknown"
	ReasonLookupUnknown   = "lookup_unknown"
	ReasonNotVisible      = "effect_not_visible"
	ReasonRetryBudget     = "retry_budget_exhausted"
	ReasonVersionChanged  = "version_changed"
	ReasonResolvedPending = "resolved"
	// ReasonKeyExpired: the provider has forgotten the native idempotency
	// key (native_idempotency.ttl), and no lookup can tell.
	ReasonKeyExpired = "native_key_expired"
	// ReasonLookupRate: an ActionSettle because the lookup budget is spent.
	ReasonLookupRate = "lookup_rate"
	// ReasonAbandoned: a started step nobody came back for, whose outcome
	// the background resolver could not establish (see package abandoned).
	ReasonAbandoned = "abandoned"
	// ReasonBudget: a new intent over its route's budget (budget: {calls,
	// per}), held for an operator's approval instead of being sent.
	ReasonBudget = "budget"
)

// WhyNewIntent is the why of a new intent's forward.
const WhyNewIntent = "new intent"

// Situation is everything the recovery table looks at.
type Situation struct {
	// Step is the current record; nil for a new key.
	Step *journal.Step
	// InFlight: a live call with this key runs in this process.
	InFlight bool
	Strategy Strategy
	Effect   rules.Effect
	// Approval: a new intent waits for an operator's approval (the
	// route's approval, required or by its approval.when).
	Approval bool
	// OverBudget: the route's budget refused to count a new intent (see
	// journal.Change.Budget).
	OverBudget bool
	// BodyHash of the arriving request.
	BodyHash string
	// Lookup is the answer of a lookup made for the step's current fence.
	Lookup LookupAnswer
	// Settling: the step's last attempt started less than an upstream
	// timeout ago, so the provider may still be executing it.
	Settling bool
	// MaxAttempts bounds re-execution of failed, retryable steps.
	MaxAttempts int
	// NativeExpired: the step was created longer ago than the route's
	// native_idempotency.ttl, so a re-send would not be deduped.
	NativeExpired bool
	// HasLookup: the route has a lookup (used when native idempotency can
	// no longer resolve the step).
	HasLookup bool
	// Backoff: the stored retryable failure asked to wait (Retry-After)
	// and the wait has not passed.
	Backoff bool
}

// Decision is the table's answer.
type Decision struct {
	Action Action
	// Hold and Reason describe the hold ActionHold places or ActionBlock
	// reports.
	Hold   journal.Hold
	Reason string
	// Recovered marks a forward or answer that resolves an interrupted call.
	Recovered bool
	// Why is a short explanation for events and logs.
	Why string
}

// Decide is the recovery table of DESIGN.md ("Step states" and "Recovery of
// a started step"): a pure function of the step, the route's strategy and
// effect, and what a lookup said.
func Decide(s Situation) Decision {
	st := s.Step
	if st == nil {
		if s.Approval {
			return Decision{Action: ActionHold, Hold: journal.HoldAwaitingApproval, Reason: ReasonApproval, Why: "route requires approval"}
		}
		if s.OverBudget {
			// Never silently refused: an operator sees it and may let it through.
			return Decision{Action: ActionHold, Hold: journal.HoldAwaitingApproval, Reason: ReasonBudget, Why: "over the route's budget"}
		}
		return Decision{Action: ActionForward, Why: WhyNewIntent}
	}
	if st.Held() {
		return decideHeld(s)
	}
	switch st.Status {
	case journal.StatusCommitted, journal.StatusVerified:
		return Decision{Action: ActionReplay, Why: "outcome stored"}
	case journal.StatusFailed:
		if !st.Retryable {
			return Decision{Action: ActionReplay, Why: "definitive failure stored"}
		}
		if s.Backoff {
			// Sending now would only be refused again, and spend an attempt.
			return Decision{Action: ActionReplay, Why: "retryable failure, but the provider asked to wait (Retry-After)"}
		}
		if s.MaxAttempts > 0 && st.Attempt >= s.MaxAttempts {
			return Decision{Action: ActionHold, Hold: journal.HoldNeedsReview, Reason: ReasonRetryBudget,
				Why: fmt.Sprintf("retry budget of %d attempts exhausted", s.MaxAttempts)}
		}
		return Decision{Action: ActionForward, Why: "retryable failure"}
	case journal.StatusPrepared:
		// An approval or a "not executed" resolution binds to the body the
		// operator saw, and lets exactly that body through: this is the only
		// place payload-mismatch is answered, because only here would a
		// different body be forwarded under the operator's decision.
		if st.ApprovedBodyHash != "" && s.BodyHash != st.ApprovedBodyHash {
			return Decision{Action: ActionMismatch, Why: "body differs from the approved one"}
		}
		return Decision{Action: ActionForward, Why: "prepared, not sent"}
	case journal.StatusStarted:
		if s.InFlight {
			return Decision{Action: ActionWait, Why: "in flight"}
		}
		return decideStarted(s)
	}
	return Decision{Action: ActionHold, Hold: journal.HoldNeedsReview, Reason: ReasonOutcomeUnknown, Why: "unknown step status " + st.Status.String()}
}

// decideStarted resolves a started step that is not in flight here: its
// outcome is unknown.
func decideStarted(s Situation) Decision {
	strategy := s.Strategy
	if strategy == StrategyNative && s.NativeExpired {
		// The provider forgot the key: a re-send would be a new call.
		if !s.HasLookup {
			return Decision{Action: ActionHold, Hold: journal.HoldNeedsReview, Reason: ReasonKeyExpired,
				Why: "outcome unknown, the provider's idempotency key has expired (native_idempotency.ttl) and no lookup can tell"}
		}
		strategy = StrategyLookup
	}
	switch strategy {
	case StrategyNative:
		return Decision{Action: ActionForward, Recovered: true, Why: "re-send: provider dedupes on the key"}
	case StrategyLookup:
		switch s.Lookup {
		case LookupFound:
			return Decision{Action: ActionRecordFound, Recovered: true, Why: "lookup found the effect"}
		case LookupAbsent:
			if s.Settling {
				return Decision{Action: ActionSettle, Why: "lookup found no effect yet, but the interrupted attempt may still land at the provider"}
			}
			return Decision{Action: ActionForward, Recovered: true, Why: "lookup found no effect: send again"}
		case LookupUnknown:
			return Decision{Action: ActionHold, Hold: journal.HoldNeedsReview, Reason: ReasonLookupUnknown, Why: "lookup could not tell"}
		case LookupThrottled:
			return Decision{Action: ActionSettle, Reason: ReasonLookupRate, Why: "the API's lookup budget (lookup.rate) is spent: ask again shortly"}
		default:
			return Decision{Action: ActionLookup, Why: "outcome unknown: ask the provider"}
		}
	}
	if s.Effect == rules.EffectReversible {
		return Decision{Action: ActionForward, Recovered: true, Why: "re-send: route is reversible and cannot be queried"}
	}
	return Decision{Action: ActionHold, Hold: journal.HoldNeedsReview, Reason: ReasonOutcomeUnknown, Why: "outcome unknown, cannot be queried, irreversible"}
}

// decideHeld answers a held step. It stays blocked until an operator acts,
// whatever body the retry carries: nothing is forwarded while a step is
// held, so a retry that differs only in fields outside the key (a new
// trace id) gets the same answer as an identical one. The body is checked
// against the reviewed one only when the hold ends and a body would be
// sent under the operator's decision (see StatusPrepared in Decide).
func decideHeld(s Situation) Decision {
	st := s.Step
	why := "held: " + st.HoldReason
	if st.BodyHash != "" && s.BodyHash != st.BodyHash {
		why += " (this retry's body differs from the held one, which is the one an operator decides on)"
	}
	return Decision{Action: ActionBlock, Hold: st.Hold, Reason: st.HoldReason, Why: why}
}

// StrategyOf reports how interrupted calls of r are resolved.
func StrategyOf(r *rules.Route) Strategy {
	st, _ := RecoveryOf(r, nil)
	return st
}

// MissingLookupRefs lists the request values r's lookup reads that st's
// stored recovery values lack (the request did not carry them): nil when
// the lookup can be made from the journal alone, or r has none.
func MissingLookupRefs(r *rules.Route, st *journal.Step) []string {
	if r == nil || r.Lookup == nil {
		return nil
	}
	return r.Lookup.AbsentRefs(rules.Values{Key: st.Key, Stored: st.RecoveryValues})
}

// NoLookupEvidence is the evidence of a recovery without the lookup that
// the request's missing values (MissingLookupRefs) made impossible.
func NoLookupEvidence(absent []string) string {
	return "no lookup: the request has no " + strings.Join(absent, ", ") + " for the lookup to search by"
}

// RecoveryOf reports how an interrupted call of r is resolved, and whether
// a lookup can tell, when absent lists the request values its lookup reads
// that the call lacks (rules.Lookup.AbsentRefs): such a lookup cannot be
// made, so the call has none. Without a lookup the native key's re-send
// resolves the call inside its lifetime, and past it the step is held;
// without either, Decide holds an irreversible call.
func RecoveryOf(r *rules.Route, absent []string) (strategy Strategy, hasLookup bool) {
	hasLookup = r.Lookup != nil && len(absent) == 0
	switch {
	case r.NativeIdempotency != nil:
		return StrategyNative, hasLookup
	case hasLookup:
		return StrategyLookup, true
	}
	return StrategyNone, false
}

// NativeExpired reports whether the provider has forgotten the step's
// native idempotency key: the step was created (its first send was no
// earlier) longer ago than native_idempotency.ttl.
func NativeExpired(r *rules.Route, st *journal.Step, now time.Time) bool {
	ni := r.NativeIdempotency
	return ni != nil && ni.TTL > 0 && !st.CreatedAt.IsZero() && now.Sub(st.CreatedAt) >= ni.TTL
}

// Would names what a decision of the recovery table would have done.
func Would(d Decision) journal.Would {
	switch d.Action {
	case ActionForward:
		return journal.WouldForward
	case ActionReplay, ActionRecordFound:
		return journal.WouldReplay
	case ActionWait, ActionSettle:
		return journal.WouldWait
	case ActionLookup:
		return journal.WouldLookup
	case ActionMismatch:
		return journal.WouldRefusePayloadMismatch
	case ActionHold, ActionBlock:
		if d.Hold == journal.HoldAwaitingApproval {
			return journal.WouldHoldApproval
		}
	}
	return journal.WouldHoldAmbiguous
}
