package journal

import "fmt"

// EventType names what happened to a step in the event log.
type EventType string

// The event types toolguard records. Change.Event takes one of them; an
// empty Change.Event records the name of the new status.
const (
	// EventStarted: a new step was claimed and sent.
	EventStarted EventType = "started"
	// EventRetried: a retryable failure was claimed and sent again.
	EventRetried EventType = "retried"
	// EventResent: an interrupted call was claimed and sent again through
	// the recovery table (native idempotency, a lookup's "absent", a
	// reversible route).
	EventResent EventType = "resent"
	// EventTakenOver: the claim of another owner whose lease lapsed was
	// taken over (recorded after the claim's own event).
	EventTakenOver EventType = "taken_over"
	// EventPrepared: a step recorded without being sent.
	EventPrepared EventType = "prepared"
	// EventHeld: a step was put on hold.
	EventHeld EventType = "held"
	// EventRecovered: a lookup found the effect of an interrupted call.
	EventRecovered EventType = "recovered"
	// EventCommitted: the upstream answered with a success.
	EventCommitted EventType = "committed"
	// EventFailed: a definitive failure, or nothing was sent.
	EventFailed EventType = "failed"
	// EventOutcomeUnknown: the call was sent and its outcome is unknown.
	EventOutcomeUnknown EventType = "outcome_unknown"
	// EventResponseHashed: the hash of a streamed oversized response.
	EventResponseHashed EventType = "response_hashed"
	// EventApproved: an operator approved a held step.
	EventApproved EventType = "approved"
	// EventResolved: an operator resolved a held step.
	EventResolved EventType = "resolved"
	// EventVerified: a verification probe saw the effect.
	EventVerified EventType = "verified"
	// EventVersionChanged: a prompt or policy version changed in a workflow.
	EventVersionChanged EventType = "version_changed"
	// EventAbandoned: the background resolver settled a started step that
	// nobody came back for.
	EventAbandoned EventType = "abandoned"
	// EventNotExecuted: the upstream said the call did not run (an MCP
	// protocol error): the step is prepared again, and the next retry is
	// sent.
	EventNotExecuted EventType = "not_executed"
	// EventExpired: a step held for approval that nobody approved within
	// the hold expiry was removed (Store.ExpireHolds); it was never sent,
	// and a retry is a new request.
	EventExpired EventType = "expired"
	// EventObserved: a call in observe mode was forwarded untouched; its
	// Reason says what enforcement would have done (ObservedReason). It is
	// recorded on the call's observation or, when the key has a guarded
	// step, on that step, which it leaves unchanged.
	EventObserved EventType = "observed"
)

// Allowed is the transition allowlist every backend enforces inside Apply:
// it reports whether a step may go from (nil for a new key) to to, by
// status and hold. It refuses, wrapping ErrTransition:
//   - a new step that is not prepared or started;
//   - leaving committed or verified for anything but committed or verified
//     (a held committed step may also be resolved "not executed" back to
//     prepared), so a recorded effect is never sent again;
//   - verified back to committed;
//   - a held step changing status without being released, or released to
//     started or failed (an approval or a resolution makes it prepared,
//     committed or verified; a send needs a claim afterwards);
//   - prepared to committed, verified or failed unless an operator
//     resolves a hold; started to verified; failed to anything but failed
//     or started. (started to prepared is allowed here, and AllowedChange
//     restricts it to a Change recording EventNotExecuted: the upstream
//     said the call did not run.)
//
// Observations (observe mode, package observe) follow their own rules: an observation may
// take any stored status, from nothing or from an observation, but is
// never held and never replaces a guarded step; a guarded step replaces an
// observation as if the key were new.
func Allowed(from, to *Step) error {
	if to == nil || to.Status < StatusPrepared || to.Status > StatusFailed {
		return fmt.Errorf("%w: to an unknown status", ErrTransition)
	}
	if to.Observed {
		return allowedObserved(from, to)
	}
	from = guardedPrior(from)
	if from == nil {
		if to.Status == StatusPrepared || to.Status == StatusStarted {
			return nil
		}
		return transitionErr(from, to, "a new step is prepared or started")
	}
	if from.Held() {
		return allowedFromHeld(from, to)
	}
	switch from.Status {
	case StatusCommitted:
		if to.Status == StatusCommitted || to.Status == StatusVerified {
			return nil
		}
		return transitionErr(from, to, "a committed effect is never sent or failed again")
	case StatusVerified:
		if to.Status == StatusVerified {
			return nil
		}
		return transitionErr(from, to, "a verified effect stays verified")
	case StatusPrepared:
		if to.Status == StatusPrepared || to.Status == StatusStarted {
			return nil
		}
		return transitionErr(from, to, "a prepared step is sent (started) before it has an outcome")
	case StatusStarted:
		if to.Status == StatusStarted || to.Status == StatusCommitted || to.Status == StatusFailed || to.Status == StatusPrepared {
			return nil
		}
		return transitionErr(from, to, "a started step gets an outcome (committed, failed), stays started, or is found not executed (prepared)")
	case StatusFailed:
		if to.Status == StatusFailed || to.Status == StatusStarted {
			return nil
		}
		return transitionErr(from, to, "a failed step is retried (started) or stays failed")
	}
	return transitionErr(from, to, "unknown status")
}

// allowedFromHeld: a held step keeps its status while held; released, it
// becomes prepared (approved, or resolved not executed), committed or
// verified (resolved committed).
func allowedFromHeld(from, to *Step) error {
	if to.Held() {
		if to.Status == from.Status {
			return nil
		}
		return transitionErr(from, to, "a held step keeps its status until an operator releases it")
	}
	switch to.Status {
	case StatusPrepared, StatusCommitted:
		return nil
	case StatusVerified:
		if from.Status == StatusVerified || from.Status == StatusCommitted {
			return nil
		}
	}
	return transitionErr(from, to, "a held step is released by an approval or a resolution (prepared, committed)")
}

// AllowedChange is Allowed plus the rules on claims: a step enters started
// from another status only with a claim (a send without a fresh fencing
// token could not be fenced off), and a claim leaves the step started,
// prepared (an approval or resolution fencing out an old owner) or
// committed (a resolution).
func AllowedChange(from *Step, ch *Change) error {
	to := &ch.Step
	if err := Allowed(from, to); err != nil {
		return err
	}
	if to.Observed {
		if ch.Claim {
			return transitionErr(from, to, "an observation is never claimed: nothing is sent under it")
		}
		return nil
	}
	from = guardedPrior(from)
	if to.Status == StatusStarted && (from == nil || from.Status != StatusStarted) && !ch.Claim {
		return transitionErr(from, to, "entering started needs a claim")
	}
	if from != nil && from.Status == StatusStarted && !from.Held() && to.Status == StatusPrepared &&
		!ch.Claim && ch.Event != EventNotExecuted {
		return transitionErr(from, to, "a started step is prepared again only when the upstream said the call did not run (not_executed)")
	}
	return nil
}

// allowedObserved: an observation starts from nothing or from another
// observation, in any stored status, and is never held.
func allowedObserved(from, to *Step) error {
	switch {
	case from != nil && !from.Observed:
		return transitionErr(from, to, "an observation never changes a guarded step")
	case to.Held():
		return transitionErr(from, to, "an observation is never held")
	}
	return nil
}

// guardedPrior is the record a guarded change starts from: nil, as for a
// new key, when the key holds only an observation.
func guardedPrior(from *Step) *Step {
	if from != nil && from.Observed {
		return nil
	}
	return from
}

func transitionErr(from, to *Step, why string) error {
	f := "new"
	if from != nil {
		f = stateName(from)
	}
	return fmt.Errorf("%w: %s → %s: %s", ErrTransition, f, stateName(to), why)
}

func stateName(s *Step) string {
	if s.Observed {
		return "observed " + s.Status.String()
	}
	if s.Held() {
		return s.Status.String() + "/" + s.Hold.String()
	}
	return s.Status.String()
}
