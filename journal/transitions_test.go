package journal

import (
	"errors"
	"testing"
)

// TestAllowed pins the allowlist's rules, one row per rule: the invariants
// that keep an effect from happening twice.
func TestAllowed(t *testing.T) {
	st := func(s Status, h Hold) *Step { return &Step{Status: s, Hold: h} }
	obs := func(s Status, h Hold) *Step { return &Step{Status: s, Hold: h, Observed: true} }
	tests := []struct {
		name  string
		from  *Step
		to    *Step
		claim bool
		ok    bool
	}{
		{name: "new prepared", to: st(StatusPrepared, HoldNone), ok: true},
		{name: "new awaiting approval", to: st(StatusPrepared, HoldAwaitingApproval), ok: true},
		{name: "new claimed", to: st(StatusStarted, HoldNone), claim: true, ok: true},
		{name: "new started without a claim", to: st(StatusStarted, HoldNone)},
		{name: "new committed", to: st(StatusCommitted, HoldNone)},
		{name: "new failed", to: st(StatusFailed, HoldNone)},
		{name: "prepared claimed", from: st(StatusPrepared, HoldNone), to: st(StatusStarted, HoldNone), claim: true, ok: true},
		{name: "prepared started without a claim", from: st(StatusPrepared, HoldNone), to: st(StatusStarted, HoldNone)},
		{name: "prepared committed", from: st(StatusPrepared, HoldNone), to: st(StatusCommitted, HoldNone)},
		{name: "approve", from: st(StatusPrepared, HoldAwaitingApproval), to: st(StatusPrepared, HoldNone), claim: true, ok: true},
		{name: "held sent", from: st(StatusPrepared, HoldAwaitingApproval), to: st(StatusStarted, HoldNone), claim: true},
		{name: "outcome committed", from: st(StatusStarted, HoldNone), to: st(StatusCommitted, HoldNone), ok: true},
		{name: "outcome failed", from: st(StatusStarted, HoldNone), to: st(StatusFailed, HoldNone), ok: true},
		{name: "outcome unknown", from: st(StatusStarted, HoldNone), to: st(StatusStarted, HoldNone), ok: true},
		{name: "takeover", from: st(StatusStarted, HoldNone), to: st(StatusStarted, HoldNone), claim: true, ok: true},
		{name: "abandon", from: st(StatusStarted, HoldNone), to: st(StatusStarted, HoldNeedsReview), ok: true},
		{name: "started verified", from: st(StatusStarted, HoldNone), to: st(StatusVerified, HoldNone)},
		{name: "started prepared", from: st(StatusStarted, HoldNone), to: st(StatusPrepared, HoldNone)},
		{name: "resolve committed", from: st(StatusStarted, HoldNeedsReview), to: st(StatusCommitted, HoldNone), claim: true, ok: true},
		{name: "resolve not executed", from: st(StatusStarted, HoldNeedsReview), to: st(StatusPrepared, HoldNone), claim: true, ok: true},
		{name: "held started released to started", from: st(StatusStarted, HoldNeedsReview), to: st(StatusStarted, HoldNone), claim: true},
		{name: "held changes status", from: st(StatusStarted, HoldNeedsReview), to: st(StatusCommitted, HoldNeedsReview)},
		{name: "verify finish", from: st(StatusCommitted, HoldNone), to: st(StatusVerified, HoldNone), ok: true},
		{name: "not visible", from: st(StatusCommitted, HoldNone), to: st(StatusCommitted, HoldNeedsReview), ok: true},
		{name: "committed re-sent", from: st(StatusCommitted, HoldNone), to: st(StatusStarted, HoldNone), claim: true},
		{name: "committed failed", from: st(StatusCommitted, HoldNone), to: st(StatusFailed, HoldNone)},
		{name: "held committed resolved not executed", from: st(StatusCommitted, HoldNeedsReview), to: st(StatusPrepared, HoldNone), claim: true, ok: true},
		{name: "verified committed", from: st(StatusVerified, HoldNone), to: st(StatusCommitted, HoldNone)},
		{name: "verified re-sent", from: st(StatusVerified, HoldNone), to: st(StatusStarted, HoldNone), claim: true},
		{name: "retry", from: st(StatusFailed, HoldNone), to: st(StatusStarted, HoldNone), claim: true, ok: true},
		{name: "retry without a claim", from: st(StatusFailed, HoldNone), to: st(StatusStarted, HoldNone)},
		{name: "retry budget hold", from: st(StatusFailed, HoldNone), to: st(StatusFailed, HoldNeedsReview), ok: true},
		{name: "failed committed", from: st(StatusFailed, HoldNone), to: st(StatusCommitted, HoldNone)},
		{name: "to unknown", from: st(StatusStarted, HoldNone), to: st(StatusUnknown, HoldNone)},
		{name: "new observation started", to: obs(StatusStarted, HoldNone), ok: true},
		{name: "new observation committed", to: obs(StatusCommitted, HoldNone), ok: true},
		{name: "new observation failed", to: obs(StatusFailed, HoldNone), ok: true},
		{name: "observation claimed", to: obs(StatusStarted, HoldNone), claim: true},
		{name: "observation held", to: obs(StatusPrepared, HoldAwaitingApproval)},
		{name: "observation again", from: obs(StatusCommitted, HoldNone), to: obs(StatusStarted, HoldNone), ok: true},
		{name: "observation outcome", from: obs(StatusStarted, HoldNone), to: obs(StatusFailed, HoldNone), ok: true},
		{name: "observation of a guarded step", from: st(StatusCommitted, HoldNone), to: obs(StatusCommitted, HoldNone)},
		{name: "observation of a held step", from: st(StatusPrepared, HoldAwaitingApproval), to: obs(StatusCommitted, HoldNone)},
		{name: "guarded claim replaces an observation", from: obs(StatusCommitted, HoldNone), to: st(StatusStarted, HoldNone), claim: true, ok: true},
		{name: "guarded hold replaces an observation", from: obs(StatusStarted, HoldNone), to: st(StatusPrepared, HoldAwaitingApproval), ok: true},
		{name: "guarded start without a claim", from: obs(StatusStarted, HoldNone), to: st(StatusStarted, HoldNone)},
		{name: "observation turned committed", from: obs(StatusCommitted, HoldNone), to: st(StatusCommitted, HoldNone)},
		{name: "observation resolved", from: obs(StatusStarted, HoldNone), to: st(StatusCommitted, HoldNone), claim: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := AllowedChange(tc.from, &Change{Step: *tc.to, Claim: tc.claim})
			if tc.ok != (err == nil) {
				t.Fatalf("AllowedChange = %v, want allowed=%v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrTransition) {
				t.Fatalf("refusal does not wrap ErrTransition: %v", err)
			}
		})
	}
}
