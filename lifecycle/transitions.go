package lifecycle

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/mcp"
	"github.com/toolguard/toolguard/rules"
)

// The transitions of a step, next to Decide: each is a pure function of
// the current record and of values captured before journal.Apply, so a
// backend may run the mutation that calls it more than once. The journal
// checks every change against its allowlist (journal.Allowed).
//
//	claim         new/prepared/failed/started → started (claimed: epoch, fence, lease)
//	takeover      any of these on a started step whose owner's lease lapsed: claimed (WithTakeover)
//	hold          any → held (awaiting_approval, needs_review)
//	record found  started → committed (a lookup found the effect)
//	outcome       started → committed | failed | started (outcome unknown)
//	response hash committed → committed (hash of a streamed response)
//	verify finish committed → verified | committed/needs_review
//	abandon       started → committed | failed | started/needs_review
//	observe       new/observed → observed (any status, as the call went);
//	              a guarded step: unchanged, with an observed event
//	observation end  observed started → observed failed (nobody came back)
//
// An operator's approve and resolve are the admin API's (admin/transitions.go).

// Claim claims a step for a send: it becomes started with a new
// attempt, the claim's lease, and no hold. fresh is the first record of a
// new key (cur nil).
func Claim(cur *journal.Step, fresh journal.Step, d Decision, why, versionChange string, lease time.Duration) journal.Change {
	st := fresh
	ev := journal.EventStarted
	if cur != nil {
		st = *cur
		switch {
		case d.Recovered:
			ev = journal.EventResent
		case cur.Status == journal.StatusFailed:
			ev = journal.EventRetried
		}
	}
	st.Status = journal.StatusStarted
	st.Hold, st.HoldReason = journal.HoldNone, ""
	st.ApprovedBodyHash = ""
	st.Attempt++
	ch := journal.Change{Step: st, Event: ev, Reason: why, Claim: true, Lease: lease}
	if cur == nil && versionChange != "" {
		ch.Extra = append(ch.Extra, journal.Event{Type: journal.EventVersionChanged, Reason: versionChange + " (allowed by policy)"})
	}
	return ch
}

// WithTakeover makes ch a takeover when cur is a started step whose owner's
// lease lapsed (another replica that died or lost the journal): the change
// claims the step, so that the old owner's late writes are refused
// (journal.ErrFenced), and records whose claim it ended and until when
// that owner's last attempt may still land (its lease's end plus lands,
// the longest send it allowed). Whatever the recovery table decided (a
// lookup's finding, a hold, a re-send), it is written under the new claim;
// a takeover never sends blindly.
func WithTakeover(ch journal.Change, cur *journal.Step, epoch uint64, lease, lands time.Duration) journal.Change {
	if cur == nil || !LeaseLapsed(cur, epoch) {
		return ch
	}
	ch.Claim, ch.Lease = true, lease
	if end := cur.LeaseUntil.Add(lands); end.After(ch.Step.SettlesAt) {
		ch.Step.SettlesAt = end
	}
	ch.Extra = append(ch.Extra, takeoverEvent(cur))
	return ch
}

// takeoverEvent records whose claim a takeover ended.
func takeoverEvent(cur *journal.Step) journal.Event {
	return journal.Event{Type: journal.EventTakenOver,
		Reason: fmt.Sprintf("lease of epoch %d fence %d lapsed at %s", cur.Epoch, cur.Fence, cur.LeaseUntil.UTC().Format(time.RFC3339Nano))}
}

// LeaseLapsed reports whether st is a started step claimed by another
// owner whose lease has lapsed, by the journal's clock. Backends that keep
// leases in the process (bbolt) leave LeaseUntil zero.
func LeaseLapsed(st *journal.Step, epoch uint64) bool {
	return st.Status == journal.StatusStarted && st.Epoch != epoch && !st.LeaseUntil.IsZero() && !st.LeaseUntil.After(st.ReadAt)
}

// InFlightElsewhere reports whether st is a started step claimed by
// another owner (another replica) whose lease is still running.
func InFlightElsewhere(st *journal.Step, epoch uint64) bool {
	return st.Status == journal.StatusStarted && !st.Held() && st.Epoch != epoch && st.LeaseUntil.After(st.ReadAt)
}

// Hold puts a step on hold; a new key is recorded prepared (nothing
// was sent). evidence, when set, is kept as the step's last error.
func Hold(cur *journal.Step, fresh journal.Step, d Decision, why, evidence string) journal.Change {
	st := fresh
	if cur != nil {
		st = *cur
	} else {
		st.Status = journal.StatusPrepared
	}
	st.Hold, st.HoldReason = d.Hold, d.Reason
	if evidence != "" {
		st.LastError = evidence
	}
	return journal.Change{Step: st, Event: journal.EventHeld, Reason: why}
}

// RecordFound records a lookup's evidence of the effect as the
// outcome of an interrupted call; a route with verification gets a
// deadline (verifyWithin > 0).
func RecordFound(cur journal.Step, found Found, why string, verifyWithin time.Duration, now time.Time) journal.Change {
	st := cur
	st.Status = journal.StatusCommitted
	st.OperationID = found.OperationID
	st.Evidence = found.Evidence
	st.Response = found.Response
	if verifyWithin > 0 && st.OperationID != "" {
		st.VerifyBy = now.Add(verifyWithin)
	}
	return journal.Change{Step: st, Event: journal.EventRecovered, Reason: why}
}

// Attempt is what one upstream attempt established, captured before the
// outcome is journaled.
type Attempt struct {
	// Err is the transport error; Sent is false only when nothing can have
	// reached the upstream.
	Err  error
	Sent bool
	// Status and StatusText are the upstream's answer when Err is nil.
	Status     int
	StatusText string
	// Native: the route uses native idempotency (a 409 means "key in use").
	Native bool
	// Answer is the carrier's record of a definitive answer.
	Answer Answer
	// VerifyWithin is the route's verification window; zero when none.
	VerifyWithin time.Duration
}

// Answer is what the journal keeps of an upstream answer: the stored
// response, the provider's operation id, what the route's outcome rules
// make of it and its retry headers. The zero Answer is no definitive
// answer (none, a 5xx, a native-idempotency 409).
type Answer struct {
	Response    *journal.Response
	OperationID string
	// Kind is what the route's outcome rules make of the answer.
	Kind rules.OutcomeKind
	// Signals are the answer's retry headers.
	Signals RetrySignals
}

// Found is the evidence of a lookup that found the effect of a call.
type Found struct {
	OperationID string
	Evidence    string
	// Response is the found object as the step's stored response; nil
	// when there is none.
	Response *journal.Response
}

// Outcome classifies an attempt into the step's next record.
func Outcome(cur journal.Step, a Attempt, now time.Time) journal.Change {
	if ch, ok := noAnswer(cur, a); ok {
		return ch
	}
	next := cur
	switch {
	case a.Status == http.StatusConflict && a.Native && a.Answer.Kind == rules.OutcomeByStatus:
		// Providers answer 409 while another request with the same
		// idempotency key is still executing (Stripe does): the outcome is
		// that request's, not known yet. The next retry re-sends the key.
		// An outcome rule that classifies the 409 takes precedence.
		next.LastError = "upstream answered " + a.StatusText + " (idempotency key in use)"
		return journal.Change{Step: next, Event: journal.EventOutcomeUnknown, Reason: "idempotency key in use at the provider"}
	}
	next.Response = a.Answer.Response
	next.LastError = ""
	answered := "upstream answered " + a.StatusText
	if !Commits(a.Status, a.Answer.Kind) {
		next.Status = journal.StatusFailed
		switch a.Answer.Kind {
		case rules.OutcomeFailure:
			next.Retryable, answered = false, answered+" (outcome rule: failure)"
		case rules.OutcomeRetryable:
			next.Retryable, answered = true, answered+" (outcome rule: retryable)"
		default:
			next.Retryable = a.Answer.Signals.Retryable(a.Status)
		}
		return journal.Change{Step: next, Event: journal.EventFailed, Reason: answered}
	}
	next.Status, next.Retryable = journal.StatusCommitted, false
	next.OperationID = a.Answer.OperationID
	switch a.Answer.Kind {
	case rules.OutcomeAlreadyDone:
		answered = "already done: " + answered + " (outcome rule: already_done)"
	case rules.OutcomeAccepted:
		answered = "accepted: " + answered + " (outcome rule: accepted; to be verified)"
	}
	next.Evidence = answered
	if a.VerifyWithin > 0 {
		next.VerifyBy = now.Add(a.VerifyWithin)
	}
	return journal.Change{Step: next, Event: journal.EventCommitted, Reason: answered}
}

// Commits reports whether an answer below 500 commits the step.
func Commits(code int, kind rules.OutcomeKind) bool {
	switch kind {
	case rules.OutcomeAccepted, rules.OutcomeAlreadyDone:
		return true
	case rules.OutcomeFailure, rules.OutcomeRetryable:
		return false
	}
	return code < 400
}

// noAnswer classifies an attempt that got no definitive answer,
// REST or MCP alike: nothing sent (failed, retryable), sent without an
// answer or answered 5xx (outcome unknown: the step stays started). ok is
// false when the upstream answered below 500.
func noAnswer(cur journal.Step, a Attempt) (journal.Change, bool) {
	next := cur
	switch {
	case a.Err != nil && !a.Sent:
		next.Status, next.Retryable = journal.StatusFailed, true
		next.LastError = "not executed: " + a.Err.Error()
		// Attempt counts what may have reached the provider: the retry
		// budget is not spent on calls that provably never left (a
		// provider not up yet, a lease that ended before the send).
		next.Attempt = max(next.Attempt-1, 0)
		return journal.Change{Step: next, Event: journal.EventFailed, Reason: "upstream unreachable; nothing was sent"}, true
	case a.Err != nil:
		next.LastError = a.Err.Error()
		return journal.Change{Step: next, Event: journal.EventOutcomeUnknown, Reason: "sent, no answer: " + a.Err.Error()}, true
	case a.Status >= 500:
		next.LastError = "upstream answered " + a.StatusText
		return journal.Change{Step: next, Event: journal.EventOutcomeUnknown, Reason: "upstream " + strconv.Itoa(a.Status) + " after the request was sent"}, true
	}
	return journal.Change{}, false
}

// ResponseHashed records the hash of an oversized response once it
// was streamed whole; ok is false when there is nothing to record.
func ResponseHashed(cur journal.Step, sum string) (journal.Change, bool) {
	if cur.Response == nil || !cur.Response.Truncated || cur.Response.BodyHash != "" {
		return journal.Change{}, false
	}
	st := cur
	resp := *cur.Response
	resp.BodyHash = sum
	st.Response = &resp
	return journal.Change{Step: st, Event: journal.EventResponseHashed, Reason: "oversized response streamed whole"}, true
}

// VerifyFinish records the end of a verification: verified when the
// effect was seen, held for review otherwise. ok is false when the step no
// longer waits for one.
func VerifyFinish(cur journal.Step, visible bool, evidence string, within time.Duration) (journal.Change, bool) {
	if cur.Status != journal.StatusCommitted || cur.VerifyBy.IsZero() || cur.Held() {
		return journal.Change{}, false
	}
	st := cur
	st.VerifyBy = time.Time{}
	if visible {
		st.Status = journal.StatusVerified
		st.Evidence = "verify " + evidence
		return journal.Change{Step: st, Event: journal.EventVerified, Reason: "verify " + evidence}, true
	}
	st.Hold, st.HoldReason = journal.HoldNeedsReview, ReasonNotVisible
	st.LastError = "effect not visible within " + within.String() + ": verify " + evidence
	return journal.Change{Step: st, Event: journal.EventHeld, Reason: st.LastError}, true
}

// VerifyClaim claims the pending verification of a committed step
// whose verifier's lease lapsed (a replica died or stopped while it
// probed), so that this replica verifies it and the old verifier's late
// write is fenced out. ok is false when there is nothing to claim: the
// step is no longer pending or is held, the claim is already ours, another
// verifier's lease still runs, or the journal keeps leases in the process
// (bbolt: LeaseUntil zero, one process per file verifies).
func VerifyClaim(cur journal.Step, epoch uint64, lease time.Duration) (journal.Change, bool) {
	if cur.Status != journal.StatusCommitted || cur.VerifyBy.IsZero() || cur.Held() ||
		cur.Epoch == epoch || cur.LeaseUntil.IsZero() || cur.LeaseUntil.After(cur.ReadAt) {
		return journal.Change{}, false
	}
	ev := takeoverEvent(&cur)
	return journal.Change{Step: cur, Event: ev.Type, Reason: "verification " + ev.Reason, Claim: true, Lease: lease}, true
}

// VerifyLeaseRunning reports whether a verifier holds st's pending
// verification: its claim's shared lease still runs, by the journal's
// clock (another replica probes, or this one, or it just committed the
// step and is about to).
func VerifyLeaseRunning(st *journal.Step) bool {
	return st.Status == journal.StatusCommitted && st.LeaseUntil.After(st.ReadAt)
}

// Abandon settles a started step that nobody came back for, without
// ever sending it: a lookup that found the effect records it (committed);
// one that found none marks the step failed and retryable (not executed,
// the caller's retry sends it); anything else holds it for review with
// ReasonAbandoned. ok is false when the step is no longer an abandoned
// started step (it moved on meanwhile).
func Abandon(cur journal.Step, lookup LookupAnswer, found *Found, evidence string, verifyWithin time.Duration, now time.Time) (journal.Change, bool) {
	if cur.Status != journal.StatusStarted || cur.Held() {
		return journal.Change{}, false
	}
	switch {
	case lookup == LookupFound && found != nil:
		ch := RecordFound(cur, *found, "abandoned call: lookup found the effect", verifyWithin, now)
		ch.Extra = append(ch.Extra, journal.Event{Type: journal.EventAbandoned, Reason: "resolved in the background; nothing was sent"})
		return ch, true
	case lookup == LookupAbsent:
		st := cur
		st.Status, st.Retryable = journal.StatusFailed, true
		st.LastError = "not executed: " + evidence
		return journal.Change{Step: st, Event: journal.EventAbandoned,
			Reason: "abandoned call: the lookup found no effect; a retry sends it again (" + evidence + ")"}, true
	}
	st := cur
	st.Hold, st.HoldReason = journal.HoldNeedsReview, ReasonAbandoned
	why := "abandoned call: outcome unknown and nobody retried it"
	if evidence != "" {
		st.LastError = evidence
		why += " (" + evidence + ")"
	}
	return journal.Change{Step: st, Event: journal.EventAbandoned, Reason: why}, true
}

// MCPVerdict is what one attempt of an MCP tools/call established, as
// MCPOutcome reads it.
type MCPVerdict struct {
	Attempt
	// Outcome is what the JSON-RPC answer says of the tool (mcp.Outcome).
	Outcome mcp.Outcome
	// Answered: a JSON-RPC answer was read; RPCError describes its error.
	Answered bool
	RPCError string
	// Rebind: the tool may need approval (required, or by its
	// approval.when), so a call that did not run stays bound to the
	// arguments it was sent with (BodyHash).
	Rebind   bool
	BodyHash string
}

// MCPOutcome classifies an attempt of a tools/call (see mcp.Outcome):
// a protocol error or an HTTP 4xx means the tool did not run, so the step
// goes back to prepared and the next retry is sent; a broken stream, a 5xx
// or an internal error leave it started (unknown); a result, isError
// included, commits it.
func MCPOutcome(cur journal.Step, v MCPVerdict, now time.Time) journal.Change {
	a := v.Attempt
	if ch, ok := noAnswer(cur, a); ok {
		return ch
	}
	next := cur
	switch {
	case !v.Answered:
		return mcpNotExecuted(next, v, "upstream answered "+a.StatusText)
	case v.Outcome == mcp.OutcomeNotExecuted && v.RPCError != "":
		return mcpNotExecuted(next, v, v.RPCError)
	case v.Outcome == mcp.OutcomeNotExecuted:
		return mcpNotExecuted(next, v, "the server asked for input before running the tool")
	case v.Outcome == mcp.OutcomeUnknown:
		next.LastError = v.RPCError
		return journal.Change{Step: next, Event: journal.EventOutcomeUnknown, Reason: "the server answered " + next.LastError + ", which does not say whether the tool ran"}
	}
	next.Response = a.Answer.Response
	next.LastError = ""
	next.Status, next.Retryable = journal.StatusCommitted, false
	next.OperationID = a.Answer.OperationID
	next.Evidence = "the tool returned a result"
	if v.Outcome == mcp.OutcomeToolError {
		next.Evidence = "the tool returned a result with isError: true"
	} else if a.VerifyWithin > 0 {
		next.VerifyBy = now.Add(a.VerifyWithin) // a tool error has no effect to verify
	}
	return journal.Change{Step: next, Event: journal.EventCommitted, Reason: next.Evidence}
}

// mcpNotExecuted puts a step whose tool did not run back to prepared,
// bound to the same arguments where an approval let them through.
func mcpNotExecuted(next journal.Step, v MCPVerdict, why string) journal.Change {
	next.Status, next.Retryable = journal.StatusPrepared, false
	next.Response = nil
	next.LastError = "not executed: " + why
	if v.Rebind {
		next.ApprovedBodyHash = v.BodyHash
	}
	return journal.Change{Step: next, Event: journal.EventNotExecuted, Reason: why + "; the tool did not run"}
}

// Observed records a call of observe mode (package observe) in the key's
// record cur: the observation fresh (or cur, an earlier observation)
// taken through the attempt's outcome, as outcome classifies it for the
// call's protocol, kept as an observation — never held, never verified,
// and without the response body, which is never replayed. A guarded step
// is never changed by an observation: it only gets the event. reason says
// what enforcement would have done (journal.ObservedReason).
func Observed(cur *journal.Step, fresh journal.Step, outcome func(journal.Step) journal.Change, reason string) journal.Change {
	if cur != nil && !cur.Observed {
		return journal.Change{Step: *cur, Event: journal.EventObserved, Reason: reason}
	}
	st := fresh
	if cur != nil {
		st.Attempt = cur.Attempt
	}
	st.Observed, st.Status = true, journal.StatusStarted
	st.Attempt++
	ch := outcome(st)
	next := ch.Step
	next.Observed = true
	next.Hold, next.HoldReason = journal.HoldNone, ""
	next.VerifyBy, next.ApprovedBodyHash = time.Time{}, ""
	if r := next.Response; r != nil {
		kept := *r
		kept.Body, kept.Truncated = nil, false
		next.Response = &kept
	}
	if next.Status == journal.StatusCommitted && next.Response == nil && next.Evidence == "" {
		next.Evidence = ch.Reason
	}
	return journal.Change{Step: next, Event: journal.EventObserved, Reason: reason + "; " + ch.Reason}
}

// ObservationEnd ends an observation whose outcome stayed unknown
// (a 5xx, no answer) and that nobody came back for: failed, so that
// retention removes it. ok is false when cur is no such observation.
func ObservationEnd(cur journal.Step) (journal.Change, bool) {
	if !cur.Observed || cur.Status != journal.StatusStarted {
		return journal.Change{}, false
	}
	st := cur
	st.Status, st.Retryable = journal.StatusFailed, false
	return journal.Change{Step: st, Event: journal.EventObserved,
		Reason: "observation ended: its outcome stayed unknown and nobody came back for it"}, true
}
