package lifecycle

import (
	"net/http"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
)

// TestObservedChange: an observation goes through the outcome table as a
// guarded step would, and comes out an observation, never held, never to
// be verified, without the response body; a guarded step only gets the
// event.
func TestObservedChange(t *testing.T) {
	fresh := journal.Step{Key: "k", BodyHash: "b", Observed: true}
	answer := func(status int, verify time.Duration) func(journal.Step) journal.Change {
		a := Attempt{Status: status, StatusText: http.StatusText(status), VerifyWithin: verify,
			Answer: Answer{Response: &journal.Response{Status: status, Body: []byte(`{"id":"x"}`), BodyHash: "h"}}}
		if status >= 500 {
			a.Answer = Answer{}
		}
		return func(cur journal.Step) journal.Change { return Outcome(cur, a, testNow) }
	}
	tests := []struct {
		name     string
		cur      *journal.Step
		outcome  func(journal.Step) journal.Change
		status   journal.Status
		observed bool
		attempt  int
	}{
		{name: "new, committed", outcome: answer(201, 0), status: journal.StatusCommitted, observed: true, attempt: 1},
		{name: "new, verification asked", outcome: answer(201, time.Minute), status: journal.StatusCommitted, observed: true, attempt: 1},
		{name: "new, failed", outcome: answer(400, 0), status: journal.StatusFailed, observed: true, attempt: 1},
		{name: "new, outcome unknown", outcome: answer(502, 0), status: journal.StatusStarted, observed: true, attempt: 1},
		{name: "again", cur: stepIn(journal.StatusCommitted, func(s *journal.Step) { s.Observed, s.Attempt = true, 4 }),
			outcome: answer(201, 0), status: journal.StatusCommitted, observed: true, attempt: 5},
		{name: "guarded step", cur: stepIn(journal.StatusStarted, nil), outcome: answer(201, 0), status: journal.StatusStarted, attempt: 1},
		{name: "held guarded step", cur: stepIn(journal.StatusPrepared, func(s *journal.Step) { s.Hold = journal.HoldAwaitingApproval }),
			outcome: answer(201, 0), status: journal.StatusPrepared, attempt: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ch := Observed(tc.cur, fresh, tc.outcome, journal.ObservedReason(journal.WouldReplay, "outcome stored"))
			allowed(t, tc.cur, ch)
			st := ch.Step
			if st.Status != tc.status || st.Observed != tc.observed || st.Attempt != tc.attempt || ch.Event != journal.EventObserved {
				t.Fatalf("change %s observed=%v attempt %d event %s; want %s observed=%v attempt %d",
					st.Status, st.Observed, st.Attempt, ch.Event, tc.status, tc.observed, tc.attempt)
			}
			if w, ok := (&journal.Event{Type: ch.Event, Reason: ch.Reason}).Would(); !ok || w != journal.WouldReplay {
				t.Errorf("reason %q does not read as would replay", ch.Reason)
			}
			if !tc.observed {
				return
			}
			if st.Held() || !st.VerifyBy.IsZero() || (st.Response != nil && (st.Response.Body != nil || st.Response.BodyHash != "h")) {
				t.Errorf("observation held=%v verify_by=%v response=%+v; want none of them, the hash kept", st.Held(), st.VerifyBy, st.Response)
			}
		})
	}
}

func TestObservationEndChange(t *testing.T) {
	tests := []struct {
		name string
		cur  *journal.Step
		ok   bool
	}{
		{name: "started observation", cur: stepIn(journal.StatusStarted, func(s *journal.Step) { s.Observed = true }), ok: true},
		{name: "committed observation", cur: stepIn(journal.StatusCommitted, func(s *journal.Step) { s.Observed, s.Evidence = true, "x" })},
		{name: "guarded started step", cur: stepIn(journal.StatusStarted, nil)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ch, ok := ObservationEnd(*tc.cur)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			allowed(t, tc.cur, ch)
			if st := ch.Step; st.Status != journal.StatusFailed || st.Retryable || !st.Observed || !st.Terminal() {
				t.Errorf("ended observation %s retryable=%v observed=%v; want failed for good", st.Status, st.Retryable, st.Observed)
			}
			if _, isWould := (&journal.Event{Type: ch.Event, Reason: ch.Reason}).Would(); isWould {
				t.Errorf("the end of an observation reads as an observed call: %q", ch.Reason)
			}
		})
	}
}

// TestWouldOf names every decision of the recovery table.
func TestWouldOf(t *testing.T) {
	tests := []struct {
		d    Decision
		want journal.Would
	}{
		{Decision{Action: ActionForward}, journal.WouldForward},
		{Decision{Action: ActionForward, Recovered: true}, journal.WouldForward},
		{Decision{Action: ActionReplay}, journal.WouldReplay},
		{Decision{Action: ActionRecordFound}, journal.WouldReplay},
		{Decision{Action: ActionWait}, journal.WouldWait},
		{Decision{Action: ActionSettle}, journal.WouldWait},
		{Decision{Action: ActionLookup}, journal.WouldLookup},
		{Decision{Action: ActionHold, Hold: journal.HoldAwaitingApproval}, journal.WouldHoldApproval},
		{Decision{Action: ActionBlock, Hold: journal.HoldAwaitingApproval}, journal.WouldHoldApproval},
		{Decision{Action: ActionHold, Hold: journal.HoldNeedsReview}, journal.WouldHoldAmbiguous},
		{Decision{Action: ActionBlock, Hold: journal.HoldNeedsReview}, journal.WouldHoldAmbiguous},
		{Decision{Action: ActionMismatch}, journal.WouldRefusePayloadMismatch},
	}
	for _, tc := range tests {
		if got := Would(tc.d); got != tc.want {
			t.Errorf("Would(%s, hold %s) = %s, want %s", tc.d.Action, tc.d.Hold, got, tc.want)
		}
	}
}
