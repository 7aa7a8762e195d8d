package journal

import (
	"fmt"
	"strings"
)

// Observations.
//
// A call of an API in observe mode is forwarded as it would be without
// toolguard and journaled as an observation: a Step with Observed set, kept
// under the call's key, and an EventObserved whose Reason says what
// enforcement would have done (ObservedReason). An observation is never
// replayed, held or recovered: a guarded call for its key treats the key as
// new, and the step it writes replaces the observation (Allowed), so that
// switching an API from observe to enforce needs no migration. An
// observation never changes a guarded step: observing a key that already
// has one only adds an EventObserved to it.

// Would is what enforcement would have done with an observed call, as the
// proxy's recovery table decided it on a read of the key's record.
type Would uint8

// What enforcement would have done.
const (
	// WouldForward: send it (a new intent, a retry of a retryable
	// failure, a re-send after an interruption).
	WouldForward Would = iota + 1
	// WouldReplay: answer a duplicate from the stored outcome.
	WouldReplay
	// WouldWait: wait for the same call in flight.
	WouldWait
	// WouldLookup: ask the provider whether an interrupted call took
	// effect before deciding.
	WouldLookup
	// WouldHoldApproval: hold a new intent for an operator's approval.
	WouldHoldApproval
	// WouldHoldAmbiguous: hold for review (an outcome that cannot be
	// known, a retry budget spent, a version change); or block a call
	// whose step is held.
	WouldHoldAmbiguous
	// WouldRefuseInvalidBody: refuse a body the key cannot be derived
	// from (400 invalid-body), or a call without a credential.
	WouldRefuseInvalidBody
	// WouldRefusePayloadMismatch: refuse a body that differs from the
	// approved one (422 payload-mismatch).
	WouldRefusePayloadMismatch
	// WouldRefuseBodyTooLarge: refuse a body over limits.max_body (413).
	WouldRefuseBodyTooLarge
)

var wouldNames = [...]string{"", "forward", "replay", "wait", "lookup", "hold_approval", "hold_ambiguous",
	"refuse_invalid_body", "refuse_payload_mismatch", "refuse_body_too_large"}

func (w Would) String() string {
	if int(w) < len(wouldNames) && w > 0 {
		return wouldNames[w]
	}
	return fmt.Sprintf("would(%d)", w)
}

// ParseWould parses a name as printed by String.
func ParseWould(s string) (Would, error) {
	for i, n := range wouldNames {
		if i > 0 && n == s {
			return Would(i), nil
		}
	}
	return 0, fmt.Errorf("unknown would %q (want %s)", s, strings.Join(wouldNames[1:], ", "))
}

// WouldNames lists every Would's name, in order.
func WouldNames() []string { return append([]string(nil), wouldNames[1:]...) }

// MarshalText implements encoding.TextMarshaler.
func (w Would) MarshalText() ([]byte, error) { return []byte(w.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (w *Would) UnmarshalText(b []byte) error {
	v, err := ParseWould(string(b))
	*w = v
	return err
}

// Stopped reports whether enforcement would have kept the call from
// reaching the provider again: a duplicate it would have answered from the
// journal or held back until the first call's outcome (replay, wait).
func (w Would) Stopped() bool { return w == WouldReplay || w == WouldWait }

// Held reports whether enforcement would have held the call for an
// operator.
func (w Would) Held() bool { return w == WouldHoldApproval || w == WouldHoldAmbiguous }

// Refused reports whether enforcement would have refused the call.
func (w Would) Refused() bool {
	return w == WouldRefuseInvalidBody || w == WouldRefusePayloadMismatch || w == WouldRefuseBodyTooLarge
}

// observedPrefix starts the Reason of every EventObserved.
const observedPrefix = "would "

// ObservedReason is the Reason of an EventObserved: "would W: why".
func ObservedReason(w Would, why string) string {
	return observedPrefix + w.String() + ": " + why
}

// Would reads what enforcement would have done from an EventObserved; ok is
// false for any other event.
func (e *Event) Would() (w Would, ok bool) {
	if e.Type != EventObserved {
		return 0, false
	}
	rest, ok := strings.CutPrefix(e.Reason, observedPrefix)
	if !ok {
		return 0, false
	}
	name, _, _ := strings.Cut(rest, ":")
	w, err := ParseWould(name)
	return w, err == nil
}

// Replaces reports whether a change of a key's record from cur to next is
// a guarded step replacing an observation. Backends stamp such a step as
// a new one (its CreatedAt is the change's time, its event has no From):
// an observation's age must not count as the guarded step's, against a
// provider's idempotency-key TTL for one.
func Replaces(cur, next *Step) bool { return cur != nil && cur.Observed && !next.Observed }
