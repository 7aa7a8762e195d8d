package lifecycle

import (
	"fmt"
	"testing"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/rules"
)

// TestDecideStartedMatrix walks every combination of (strategy × lookup
// answer × effect) for a started step not in flight, the heart of
// recovery: no row may re-send an irreversible call whose effect may have
// happened unless the provider dedupes it or a lookup said it is absent.
func TestDecideStartedMatrix(t *testing.T) {
	type want struct {
		action    Action
		reason    string
		recovered bool
	}
	hold := func(reason string) want { return want{ActionHold, reason, false} }
	table := map[Strategy]map[LookupAnswer]want{
		StrategyNative: {
			LookupNotAsked: {ActionForward, "", true}, LookupFound: {ActionForward, "", true},
			LookupAbsent: {ActionForward, "", true}, LookupUnknown: {ActionForward, "", true},
		},
		StrategyLookup: {
			LookupNotAsked: {ActionLookup, "", false}, LookupFound: {ActionRecordFound, "", true},
			LookupAbsent: {ActionForward, "", true}, LookupUnknown: hold(ReasonLookupUnknown),
		},
	}
	for _, effect := range []rules.Effect{rules.EffectIrreversible, rules.EffectReversible} {
		for _, strategy := range []Strategy{StrategyNone, StrategyNative, StrategyLookup} {
			for _, lookup := range []LookupAnswer{LookupNotAsked, LookupFound, LookupAbsent, LookupUnknown} {
				for _, settling := range []bool{false, true} {
					name := fmt.Sprintf("%s/%s/%s/settling=%v", effect, strategy, lookup, settling)
					t.Run(name, func(t *testing.T) {
						w, ok := table[strategy][lookup]
						if strategy == StrategyNone {
							ok = true
							w = hold(ReasonOutcomeUnknown)
							if effect == rules.EffectReversible {
								w = want{ActionForward, "", true}
							}
						}
						// "Absent" is final only once the interrupted attempt
						// can no longer land.
						if strategy == StrategyLookup && lookup == LookupAbsent && settling {
							w = want{ActionSettle, "", false}
						}
						if !ok {
							t.Fatal("missing table row")
						}
						st := &journal.Step{Status: journal.StatusStarted, BodyHash: "b"}
						got := Decide(Situation{Step: st, Strategy: strategy, Effect: effect, BodyHash: "b", Lookup: lookup, Settling: settling, MaxAttempts: 3})
						if got.Action != w.action || got.Reason != w.reason || got.Recovered != w.recovered {
							t.Fatalf("Decide = %+v, want action %s reason %q recovered %v", got, w.action, w.reason, w.recovered)
						}
					})
				}
			}
		}
	}
}

func TestDecide(t *testing.T) {
	step := func(status journal.Status, mod func(*journal.Step)) *journal.Step {
		s := &journal.Step{Status: status, BodyHash: "b", Attempt: 1}
		if mod != nil {
			mod(s)
		}
		return s
	}
	tests := []struct {
		name   string
		sit    Situation
		action Action
		reason string
	}{
		{name: "new intent", sit: Situation{}, action: ActionForward},
		{name: "new intent needing approval", sit: Situation{Approval: true}, action: ActionHold, reason: ReasonApproval},
		{name: "new intent over budget", sit: Situation{OverBudget: true}, action: ActionHold, reason: ReasonBudget},
		{name: "approval before budget", sit: Situation{Approval: true, OverBudget: true}, action: ActionHold, reason: ReasonApproval},
		{name: "over budget, existing step", sit: Situation{Step: step(journal.StatusFailed, func(s *journal.Step) { s.Retryable = true }), OverBudget: true, MaxAttempts: 3}, action: ActionForward},
		{name: "over budget hold blocks", sit: Situation{Step: step(journal.StatusPrepared, func(s *journal.Step) { s.Hold, s.HoldReason = journal.HoldAwaitingApproval, ReasonBudget })}, action: ActionBlock, reason: ReasonBudget},
		{name: "committed replays", sit: Situation{Step: step(journal.StatusCommitted, nil)}, action: ActionReplay},
		{name: "verified replays", sit: Situation{Step: step(journal.StatusVerified, nil)}, action: ActionReplay},
		{name: "definitive failure replays", sit: Situation{Step: step(journal.StatusFailed, nil)}, action: ActionReplay},
		{name: "retryable failure retries", sit: Situation{Step: step(journal.StatusFailed, func(s *journal.Step) { s.Retryable = true }), MaxAttempts: 3}, action: ActionForward},
		{name: "retry budget exhausted holds", sit: Situation{Step: step(journal.StatusFailed, func(s *journal.Step) { s.Retryable, s.Attempt = true, 3 }), MaxAttempts: 3}, action: ActionHold, reason: ReasonRetryBudget},
		{name: "in flight waits", sit: Situation{Step: step(journal.StatusStarted, nil), InFlight: true}, action: ActionWait},
		{name: "awaiting approval blocks", sit: Situation{Step: step(journal.StatusPrepared, func(s *journal.Step) { s.Hold, s.HoldReason = journal.HoldAwaitingApproval, ReasonApproval })}, action: ActionBlock, reason: ReasonApproval},
		// Regression: a held step's retry with a new trace id (same key, other
		// whole-body hash) was answered 422 payload-mismatch, which an agent
		// reads as final. Nothing is forwarded while held, so it gets the
		// identical retry's answer.
		{name: "awaiting approval, other body", sit: Situation{Step: step(journal.StatusPrepared, func(s *journal.Step) { s.Hold, s.HoldReason = journal.HoldAwaitingApproval, ReasonApproval }), BodyHash: "other"}, action: ActionBlock, reason: ReasonApproval},
		{name: "approved forwards", sit: Situation{Step: step(journal.StatusPrepared, func(s *journal.Step) { s.ApprovedBodyHash = "b" }), BodyHash: "b"}, action: ActionForward},
		{name: "approved, other body", sit: Situation{Step: step(journal.StatusPrepared, func(s *journal.Step) { s.ApprovedBodyHash = "b" }), BodyHash: "c"}, action: ActionMismatch},
		{name: "needs review blocks", sit: Situation{Step: step(journal.StatusStarted, func(s *journal.Step) { s.Hold, s.HoldReason = journal.HoldNeedsReview, ReasonOutcomeUnknown }), BodyHash: "b"}, action: ActionBlock, reason: ReasonOutcomeUnknown},
		{name: "needs review, other body", sit: Situation{Step: step(journal.StatusStarted, func(s *journal.Step) { s.Hold, s.HoldReason = journal.HoldNeedsReview, ReasonOutcomeUnknown }), BodyHash: "x"}, action: ActionBlock, reason: ReasonOutcomeUnknown},
		{name: "version changed, other body", sit: Situation{Step: step(journal.StatusPrepared, func(s *journal.Step) { s.Hold, s.HoldReason = journal.HoldNeedsReview, ReasonVersionChanged }), BodyHash: "x"}, action: ActionBlock, reason: ReasonVersionChanged},
		{name: "resolved not executed forwards", sit: Situation{Step: step(journal.StatusPrepared, func(s *journal.Step) { s.ApprovedBodyHash, s.Decision = "b", "resolved_not_executed" }), BodyHash: "b"}, action: ActionForward},
		{name: "resolved not executed, other body", sit: Situation{Step: step(journal.StatusPrepared, func(s *journal.Step) { s.ApprovedBodyHash, s.Decision = "b", "resolved_not_executed" }), BodyHash: "x"}, action: ActionMismatch},
		{name: "committed, other body replays", sit: Situation{Step: step(journal.StatusCommitted, nil), BodyHash: "x"}, action: ActionReplay},
		{name: "held committed, other body blocks", sit: Situation{Step: step(journal.StatusCommitted, func(s *journal.Step) { s.Hold, s.HoldReason = journal.HoldNeedsReview, ReasonNotVisible }), BodyHash: "x"}, action: ActionBlock, reason: ReasonNotVisible},
		{name: "held committed blocks", sit: Situation{Step: step(journal.StatusCommitted, func(s *journal.Step) { s.Hold, s.HoldReason = journal.HoldNeedsReview, ReasonNotVisible }), BodyHash: "b"}, action: ActionBlock, reason: ReasonNotVisible},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.sit.BodyHash == "" {
				tc.sit.BodyHash = "b"
			}
			got := Decide(tc.sit)
			if got.Action != tc.action || got.Reason != tc.reason {
				t.Fatalf("Decide = %+v, want %s %q", got, tc.action, tc.reason)
			}
		})
	}
}

// A started step whose route has a lookup that reads a business reference
// the request did not carry (key.reference absent) has no lookup: inside
// the native key's lifetime the re-send resolves it, past it (or without
// a native key) an irreversible call is held; never a lookup made without
// its reference. RecoveryOf gives the Situation's strategy and lookup.
func TestDecideWithoutReference(t *testing.T) {
	native := &rules.NativeIdempotency{Header: "Idempotency-Key"}
	lookup := &rules.Lookup{}
	absent := []string{"body.metadata[order_id]"}
	tests := []struct {
		name          string
		route         *rules.Route
		absent        []string
		nativeExpired bool
		action        Action
		reason        string
	}{
		{name: "native and lookup, reference present, inside ttl", route: &rules.Route{NativeIdempotency: native, Lookup: lookup}, action: ActionForward},
		{name: "native and lookup, reference present, past ttl", route: &rules.Route{NativeIdempotency: native, Lookup: lookup}, nativeExpired: true, action: ActionLookup},
		{name: "native and lookup, reference absent, inside ttl", route: &rules.Route{NativeIdempotency: native, Lookup: lookup}, absent: absent, action: ActionForward},
		{name: "native and lookup, reference absent, past ttl", route: &rules.Route{NativeIdempotency: native, Lookup: lookup}, absent: absent, nativeExpired: true, action: ActionHold, reason: ReasonKeyExpired},
		{name: "lookup only, reference present", route: &rules.Route{Lookup: lookup}, action: ActionLookup},
		{name: "lookup only, reference absent", route: &rules.Route{Lookup: lookup}, absent: absent, action: ActionHold, reason: ReasonOutcomeUnknown},
		{name: "native only, past ttl", route: &rules.Route{NativeIdempotency: native}, nativeExpired: true, action: ActionHold, reason: ReasonKeyExpired},
		{name: "neither", route: &rules.Route{}, action: ActionHold, reason: ReasonOutcomeUnknown},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			strategy, hasLookup := RecoveryOf(tc.route, tc.absent)
			st := &journal.Step{Status: journal.StatusStarted, BodyHash: "b"}
			got := Decide(Situation{Step: st, Strategy: strategy, HasLookup: hasLookup, Effect: rules.EffectIrreversible,
				BodyHash: "b", NativeExpired: tc.nativeExpired, MaxAttempts: 3})
			if got.Action != tc.action || got.Reason != tc.reason {
				t.Fatalf("Decide = %+v, want %s %q", got, tc.action, tc.reason)
			}
		})
	}
}

// TestStrategyOf: native idempotency wins over a lookup; a route with
// neither has none. The names are the metrics' and the logs'.
func TestStrategyOf(t *testing.T) {
	lookup := &rules.Lookup{}
	native := &rules.NativeIdempotency{Header: "Idempotency-Key"}
	tests := []struct {
		route *rules.Route
		want  Strategy
		name  string
	}{
		{&rules.Route{}, StrategyNone, "none"},
		{&rules.Route{Lookup: lookup}, StrategyLookup, "lookup"},
		{&rules.Route{NativeIdempotency: native, Lookup: lookup}, StrategyNative, "native"},
	}
	for _, tc := range tests {
		if got := StrategyOf(tc.route); got != tc.want || got.String() != tc.name {
			t.Errorf("StrategyOf = %s, want %s", got, tc.name)
		}
	}
	if got := ActionRecordFound.String(); got != "record_found" {
		t.Errorf("ActionRecordFound = %q", got)
	}
}
