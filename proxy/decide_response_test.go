package proxy

import (
	"net/http"
	"strings"
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
			if got := nativeExpired(tc.route, st, now); got != tc.want {
				t.Fatalf("nativeExpired = %v, want %v", got, tc.want)
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
			got := readRetrySignals(tc.h, now)
			if got.after != tc.after || got.should != tc.should {
				t.Fatalf("readRetrySignals = %+v, want after %s should %d", got, tc.after, tc.should)
			}
		})
	}
	for _, tc := range []struct {
		s    retrySignals
		code int
		want bool
	}{
		{retrySignals{}, 429, true}, {retrySignals{}, 400, false},
		{retrySignals{should: 1}, 400, true}, {retrySignals{should: -1}, 429, false},
	} {
		if got := tc.s.retryable(tc.code); got != tc.want {
			t.Errorf("%+v.retryable(%d) = %v, want %v", tc.s, tc.code, got, tc.want)
		}
	}
}

// TestStripeShapes: every problem toolguard answers on a guarded route
// has a Stripe shape; holds and bad input say "do not retry", and only
// answers a retry can resolve say "retry".
func TestStripeShapes(t *testing.T) {
	retry := map[string]bool{ProblemInProgress: true, ProblemUpstreamUnreachable: true, ProblemOutcomeUnknown: true, ProblemUnavailable: true, ProblemRequestTimeout: true}
	for typ := range problemInfo {
		if strings.HasPrefix(typ, "urn:toolguard:admin:") {
			continue
		}
		t.Run(typ, func(t *testing.T) {
			sh, ok := stripeShapes[typ]
			if !ok {
				t.Fatal("no Stripe shape")
			}
			if sh.shouldRetry != retry[typ] {
				t.Errorf("shouldRetry = %v, want %v", sh.shouldRetry, retry[typ])
			}
			resp := renderProblem(rules.ErrorFormat{Style: rules.ErrorsStripe}, newProblem(typ, "k", "why"), nil)
			if resp.StatusCode != problemInfo[typ].status {
				t.Errorf("status %d, want %d", resp.StatusCode, problemInfo[typ].status)
			}
		})
	}
}

func TestLookupBudget(t *testing.T) {
	var b lookupBudget
	r := &rules.Rate{N: 2, Per: time.Second}
	t0 := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	steps := []struct {
		at   time.Duration
		api  string
		ok   bool
		wait time.Duration
	}{
		{at: 0, api: "a", ok: true},
		{at: 0, api: "a", ok: true},
		{at: 0, api: "a", ok: false, wait: 500 * time.Millisecond},
		{at: 0, api: "b", ok: true}, // budgets are per API
		{at: 250 * time.Millisecond, api: "a", ok: false, wait: 250 * time.Millisecond},
		{at: 500 * time.Millisecond, api: "a", ok: true},
		{at: 10 * time.Second, api: "a", ok: true}, // refills up to N only
		{at: 10 * time.Second, api: "a", ok: true},
		{at: 10 * time.Second, api: "a", ok: false, wait: 500 * time.Millisecond},
	}
	for i, s := range steps {
		ok, wait := b.take(s.api, r, t0.Add(s.at))
		if ok != s.ok || wait != s.wait {
			t.Fatalf("step %d: take = %v, %s; want %v, %s", i, ok, wait, s.ok, s.wait)
		}
	}
	if ok, _ := b.take("a", nil, t0); !ok {
		t.Fatal("a nil rate is unlimited")
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
			if got := backoff(tc.st, tc.now); got != tc.want {
				t.Fatalf("backoff = %v, want %v", got, tc.want)
			}
		})
	}
}
