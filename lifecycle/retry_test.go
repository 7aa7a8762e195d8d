package lifecycle

import (
	"net/http"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/rules"
)

// TestDecideNativeExpiredAndThrottled: past native_idempotency.ttl a
// started step is never re-sent on the key (a lookup decides, or it is
// held), and a throttled lookup answers in-progress, never absent.
func TestDecideNativeExpiredAndThrottled(t *testing.T) {
	started := &journal.Step{Status: journal.StatusStarted, BodyHash: "b"}
	tests := []struct {
		name      string
		sit       Situation
		action    Action
		reason    string
		recovered bool
	}{
		{name: "native within ttl re-sends", sit: Situation{Strategy: StrategyNative},
			action: ActionForward, recovered: true},
		{name: "native past ttl without lookup holds", sit: Situation{Strategy: StrategyNative, NativeExpired: true},
			action: ActionHold, reason: ReasonKeyExpired},
		{name: "native past ttl without lookup holds a reversible route too", sit: Situation{Strategy: StrategyNative, NativeExpired: true, Effect: rules.EffectReversible},
			action: ActionHold, reason: ReasonKeyExpired},
		{name: "native past ttl asks the lookup", sit: Situation{Strategy: StrategyNative, NativeExpired: true, HasLookup: true},
			action: ActionLookup},
		{name: "native past ttl, lookup found", sit: Situation{Strategy: StrategyNative, NativeExpired: true, HasLookup: true, Lookup: LookupFound},
			action: ActionRecordFound, recovered: true},
		{name: "native past ttl, lookup absent re-sends", sit: Situation{Strategy: StrategyNative, NativeExpired: true, HasLookup: true, Lookup: LookupAbsent},
			action: ActionForward, recovered: true},
		{name: "native past ttl, lookup absent while settling", sit: Situation{Strategy: StrategyNative, NativeExpired: true, HasLookup: true, Lookup: LookupAbsent, Settling: true},
			action: ActionSettle},
		{name: "native past ttl, lookup unknown holds", sit: Situation{Strategy: StrategyNative, NativeExpired: true, HasLookup: true, Lookup: LookupUnknown},
			action: ActionHold, reason: ReasonLookupUnknown},
		{name: "lookup throttled settles", sit: Situation{Strategy: StrategyLookup, Lookup: LookupThrottled},
			action: ActionSettle, reason: ReasonLookupRate},
		{name: "lookup throttled on a reversible route settles", sit: Situation{Strategy: StrategyLookup, Lookup: LookupThrottled, Effect: rules.EffectReversible},
			action: ActionSettle, reason: ReasonLookupRate},
		{name: "retryable failure is retried", sit: Situation{Step: &journal.Step{Status: journal.StatusFailed, Retryable: true, Attempt: 1}, MaxAttempts: 3},
			action: ActionForward},
		{name: "retryable failure inside its Retry-After is replayed", sit: Situation{Step: &journal.Step{Status: journal.StatusFailed, Retryable: true, Attempt: 1}, MaxAttempts: 3, Backoff: true},
			action: ActionReplay},
		{name: "expired key of a committed step replays", sit: Situation{Strategy: StrategyNative, NativeExpired: true,
			Step: &journal.Step{Status: journal.StatusCommitted}}, action: ActionReplay},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sit := tc.sit
			if sit.Step == nil {
				sit.Step = started
			}
			if sit.Effect == 0 {
				sit.Effect = rules.EffectIrreversible
			}
			sit.BodyHash = "b"
			got := Decide(sit)
			if got.Action != tc.action || got.Reason != tc.reason || got.Recovered != tc.recovered {
				t.Fatalf("Decide = %+v, want action %s reason %q recovered %v", got, tc.action, tc.reason, tc.recovered)
			}
		})
	}
}

func TestNativeExpired(t *testing.T) {
	now := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	route := func(ttl time.Duration) *rules.Route {
		return &rules.Route{NativeIdempotency: &rules.NativeIdempotency{Header: "Idempotency-Key", TTL: ttl}}
	}
	tests := []struct {
		name  string
		route *rules.Route
		age   time.Duration
		want  bool
	}{
		{name: "no native idempotency", route: &rules.Route{}, age: 48 * time.Hour},
		{name: "no ttl", route: route(0), age: 48 * time.Hour},
		{name: "inside ttl", route: route(24 * time.Hour), age: 23 * time.Hour},
		{name: "at ttl", route: route(24 * time.Hour), age: 24 * time.Hour, want: true},
		{name: "past ttl", route: route(24 * time.Hour), age: 25 * time.Hour, want: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := &journal.Step{CreatedAt: now.Add(-tc.age)}
			if got := NativeExpired(tc.route, st, now); got != tc.want {
				t.Fatalf("NativeExpired = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestReadRetrySignals(t *testing.T) {
	now := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		h      http.Header
		after  time.Duration
		should int8
	}{
		{name: "none", h: http.Header{}},
		{name: "seconds", h: http.Header{"Retry-After": {"12"}}, after: 12 * time.Second},
		{name: "date", h: http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}}, after: 90 * time.Second},
		{name: "past date", h: http.Header{"Retry-After": {now.Add(-time.Minute).Format(http.TimeFormat)}}},
		{name: "garbage", h: http.Header{"Retry-After": {"soon"}}},
		{name: "negative", h: http.Header{"Retry-After": {"-3"}}},
		{name: "ms wins", h: http.Header{"Retry-After": {"12"}, "Retry-After-Ms": {"250"}}, after: 250 * time.Millisecond},
		{name: "stripe true", h: http.Header{"Stripe-Should-Retry": {"true"}}, should: 1},
		{name: "stripe false", h: http.Header{"Stripe-Should-Retry": {"false"}}, should: -1},
		{name: "x-should-retry", h: http.Header{"X-Should-Retry": {"False"}}, should: -1},
		{name: "stripe first", h: http.Header{"Stripe-Should-Retry": {"true"}, "X-Should-Retry": {"false"}}, should: 1},
		{name: "unknown value", h: http.Header{"X-Should-Retry": {"maybe"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ReadRetrySignals(tc.h, now)
			if got.After != tc.after || got.Should != tc.should {
				t.Fatalf("ReadRetrySignals = %+v, want after %s should %d", got, tc.after, tc.should)
			}
		})
	}
	for _, tc := range []struct {
		s    RetrySignals
		code int
		want bool
	}{
		{RetrySignals{}, 429, true}, {RetrySignals{}, 400, false},
		{RetrySignals{Should: 1}, 400, true}, {RetrySignals{Should: -1}, 429, false},
	} {
		if got := tc.s.Retryable(tc.code); got != tc.want {
			t.Errorf("%+v.Retryable(%d) = %v, want %v", tc.s, tc.code, got, tc.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	at := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	step := func(retryable bool, h http.Header) *journal.Step {
		return &journal.Step{Status: journal.StatusFailed, Retryable: retryable, UpdatedAt: at, Response: &journal.Response{Status: 429, Header: h}}
	}
	wait := http.Header{"Retry-After": {"30"}}
	tests := []struct {
		name string
		st   *journal.Step
		now  time.Time
		want bool
	}{
		{name: "inside Retry-After", st: step(true, wait), now: at.Add(10 * time.Second), want: true},
		{name: "after Retry-After", st: step(true, wait), now: at.Add(30 * time.Second)},
		{name: "no Retry-After", st: step(true, http.Header{}), now: at},
		{name: "definitive failure", st: step(false, wait), now: at},
		{name: "committed", st: &journal.Step{Status: journal.StatusCommitted, UpdatedAt: at, Response: &journal.Response{Header: wait}}, now: at},
		{name: "no response", st: &journal.Step{Status: journal.StatusFailed, Retryable: true, UpdatedAt: at}, now: at},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Backoff(tc.st, tc.now); got != tc.want {
				t.Fatalf("Backoff = %v, want %v", got, tc.want)
			}
		})
	}
}
