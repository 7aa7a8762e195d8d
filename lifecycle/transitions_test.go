package lifecycle

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/mcp"
	"github.com/toolguard/toolguard/rules"
)

var testNow = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func stepIn(status journal.Status, mod func(*journal.Step)) *journal.Step {
	s := &journal.Step{Key: "k", Status: status, BodyHash: "b", Attempt: 1, Epoch: 1, Fence: 3}
	if mod != nil {
		mod(s)
	}
	return s
}

// allowed fails t when the journal's allowlist refuses ch from cur: every
// transition the proxy makes must be one the backends accept.
func allowed(t *testing.T, cur *journal.Step, ch journal.Change) {
	t.Helper()
	if err := journal.AllowedChange(cur, &ch); err != nil {
		t.Fatalf("the journal refuses this change: %v", err)
	}
}

// TestClaimChange covers every claim: a new step, a prepared one, a retry
// of a failure, a recovered re-send and a takeover of a lapsed lease.
func TestClaimChange(t *testing.T) {
	fresh := journal.Step{Key: "k", BodyHash: "b"}
	tests := []struct {
		name    string
		cur     *journal.Step
		d       Decision
		version string
		event   journal.EventType
		extra   []journal.EventType
		attempt int
	}{
		{name: "new", d: Decision{Action: ActionForward}, event: journal.EventStarted, attempt: 1},
		{name: "new with an allowed version change", d: Decision{Action: ActionForward}, version: "prompt version 1 → 2", event: journal.EventStarted, extra: []journal.EventType{journal.EventVersionChanged}, attempt: 1},
		{name: "approved", cur: stepIn(journal.StatusPrepared, func(s *journal.Step) { s.Attempt, s.ApprovedBodyHash = 0, "b" }), d: Decision{Action: ActionForward}, event: journal.EventStarted, attempt: 1},
		{name: "retry", cur: stepIn(journal.StatusFailed, func(s *journal.Step) { s.Retryable = true }), d: Decision{Action: ActionForward}, event: journal.EventRetried, attempt: 2},
		{name: "recovered re-send", cur: stepIn(journal.StatusStarted, nil), d: Decision{Action: ActionForward, Recovered: true}, event: journal.EventResent, attempt: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ch := Claim(tc.cur, fresh, tc.d, "why", tc.version, 15*time.Second)
			allowed(t, tc.cur, ch)
			st := ch.Step
			if !ch.Claim || ch.Lease != 15*time.Second || st.Status != journal.StatusStarted || st.Held() || st.ApprovedBodyHash != "" || st.Attempt != tc.attempt || ch.Event != tc.event {
				t.Fatalf("claim = %+v (step %s attempt %d)", ch, st.Status, st.Attempt)
			}
			if len(ch.Extra) != len(tc.extra) {
				t.Fatalf("extra events %+v, want %v", ch.Extra, tc.extra)
			}
			for i, e := range ch.Extra {
				if e.Type != tc.extra[i] {
					t.Fatalf("extra event %d is %s, want %s", i, e.Type, tc.extra[i])
				}
			}
		})
	}
}

// TestTakeover: a change to a started step whose owner's lease lapsed
// claims it (fencing the old owner out) and records the takeover; any
// other change is left as it is.
func TestTakeover(t *testing.T) {
	lapsed := stepIn(journal.StatusStarted, func(s *journal.Step) { s.Epoch, s.LeaseUntil, s.ReadAt = 9, testNow, testNow.Add(time.Second) })
	running := stepIn(journal.StatusStarted, func(s *journal.Step) { s.Epoch, s.LeaseUntil, s.ReadAt = 9, testNow.Add(time.Second), testNow })
	hold := Decision{Action: ActionHold, Hold: journal.HoldNeedsReview, Reason: ReasonOutcomeUnknown}
	changes := map[string]func(cur *journal.Step) journal.Change{
		"re-send": func(cur *journal.Step) journal.Change {
			return Claim(cur, journal.Step{}, Decision{Action: ActionForward, Recovered: true}, "why", "", time.Second)
		},
		"hold": func(cur *journal.Step) journal.Change { return Hold(cur, journal.Step{}, hold, "why", "") },
		"record found": func(cur *journal.Step) journal.Change {
			return RecordFound(*cur, Found{OperationID: "op", Evidence: "found"}, "why", 0, testNow)
		},
		"abandon": func(cur *journal.Step) journal.Change {
			ch, _ := Abandon(*cur, LookupNotAsked, nil, "", 0, testNow)
			return ch
		},
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			ch := WithTakeover(change(lapsed), lapsed, 1, 15*time.Second, 30*time.Second)
			allowed(t, lapsed, ch)
			last := ch.Extra[len(ch.Extra)-1]
			if !ch.Claim || ch.Lease != 15*time.Second || last.Type != journal.EventTakenOver {
				t.Fatalf("takeover = %+v", ch)
			}
			// The old owner's last attempt may land until its lease's
			// end plus the longest send it allowed.
			if want := lapsed.LeaseUntil.Add(30 * time.Second); !ch.Step.SettlesAt.Equal(want) {
				t.Fatalf("SettlesAt = %v, want %v", ch.Step.SettlesAt, want)
			}
			plain := change(running)
			if got := WithTakeover(plain, running, 1, 15*time.Second, 30*time.Second); got.Claim != plain.Claim || len(got.Extra) != len(plain.Extra) {
				t.Fatalf("a running lease was taken over: %+v", got)
			}
		})
	}
}

// TestLeaseStates: in flight elsewhere while another owner's lease runs,
// lapsed after it; never for our own epoch or a process-local lease.
func TestLeaseStates(t *testing.T) {
	tests := []struct {
		name              string
		step              *journal.Step
		elsewhere, lapsed bool
	}{
		{name: "bbolt: no lease", step: stepIn(journal.StatusStarted, func(s *journal.Step) { s.Epoch, s.ReadAt = 9, testNow })},
		{name: "another owner, lease running", step: stepIn(journal.StatusStarted, func(s *journal.Step) { s.Epoch, s.LeaseUntil, s.ReadAt = 9, testNow.Add(time.Second), testNow }), elsewhere: true},
		{name: "another owner, lease lapsed", step: stepIn(journal.StatusStarted, func(s *journal.Step) { s.Epoch, s.LeaseUntil, s.ReadAt = 9, testNow, testNow }), lapsed: true},
		{name: "our own claim", step: stepIn(journal.StatusStarted, func(s *journal.Step) { s.LeaseUntil, s.ReadAt = testNow.Add(time.Second), testNow })},
		{name: "held", step: stepIn(journal.StatusStarted, func(s *journal.Step) {
			s.Epoch, s.LeaseUntil, s.ReadAt, s.Hold = 9, testNow.Add(time.Second), testNow, journal.HoldNeedsReview
		})},
		{name: "committed", step: stepIn(journal.StatusCommitted, func(s *journal.Step) { s.Epoch, s.LeaseUntil, s.ReadAt = 9, testNow.Add(time.Second), testNow })},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := InFlightElsewhere(tc.step, 1); got != tc.elsewhere {
				t.Errorf("InFlightElsewhere = %v", got)
			}
			if got := LeaseLapsed(tc.step, 1) && !tc.step.Held(); got != tc.lapsed {
				t.Errorf("LeaseLapsed = %v", got)
			}
		})
	}
}

func TestHoldAndRecordFound(t *testing.T) {
	d := Decision{Action: ActionHold, Hold: journal.HoldNeedsReview, Reason: ReasonLookupUnknown}
	ch := Hold(nil, journal.Step{Key: "k"}, Decision{Action: ActionHold, Hold: journal.HoldAwaitingApproval, Reason: ReasonApproval}, "why", "")
	allowed(t, nil, ch)
	if ch.Step.Status != journal.StatusPrepared || ch.Step.Hold != journal.HoldAwaitingApproval || ch.Event != journal.EventHeld {
		t.Fatalf("hold of a new key: %+v", ch)
	}
	cur := stepIn(journal.StatusStarted, nil)
	ch = Hold(cur, journal.Step{}, d, "why", "lookup timed out")
	allowed(t, cur, ch)
	if ch.Step.Status != journal.StatusStarted || ch.Step.HoldReason != ReasonLookupUnknown || ch.Step.LastError != "lookup timed out" || ch.Claim {
		t.Fatalf("hold of a started step: %+v", ch)
	}
	for _, within := range []time.Duration{0, time.Minute} {
		ch = RecordFound(*cur, Found{OperationID: "op", Evidence: "lookup found op"}, "why", within, testNow)
		allowed(t, cur, ch)
		wantBy := time.Time{}
		if within > 0 {
			wantBy = testNow.Add(within)
		}
		if ch.Step.Status != journal.StatusCommitted || ch.Step.OperationID != "op" || ch.Event != journal.EventRecovered || !ch.Step.VerifyBy.Equal(wantBy) {
			t.Fatalf("record found (verify within %v): %+v", within, ch)
		}
	}
}

// TestOutcomeChangeMatrix classifies every kind of attempt.
func TestOutcomeChangeMatrix(t *testing.T) {
	ans := Answer{Response: &journal.Response{Status: 201}, OperationID: "op"}
	kind := func(k rules.OutcomeKind) Answer { a := ans; a.Kind = k; return a }
	tests := []struct {
		name      string
		a         Attempt
		status    journal.Status
		retryable bool
		event     journal.EventType
		verify    bool
	}{
		{name: "nothing sent", a: Attempt{Err: errors.New("dial refused")}, status: journal.StatusFailed, retryable: true, event: journal.EventFailed},
		{name: "sent, no answer", a: Attempt{Err: errors.New("timeout"), Sent: true}, status: journal.StatusStarted, event: journal.EventOutcomeUnknown},
		{name: "5xx", a: Attempt{Sent: true, Status: 502, StatusText: "502 Bad Gateway"}, status: journal.StatusStarted, event: journal.EventOutcomeUnknown},
		{name: "409, native key in use", a: Attempt{Sent: true, Status: 409, StatusText: "409 Conflict", Native: true}, status: journal.StatusStarted, event: journal.EventOutcomeUnknown},
		{name: "409, no native key", a: Attempt{Sent: true, Status: 409, StatusText: "409 Conflict", Answer: ans}, status: journal.StatusFailed, event: journal.EventFailed},
		{name: "429 retryable", a: Attempt{Sent: true, Status: 429, StatusText: "429 Too Many Requests", Answer: ans}, status: journal.StatusFailed, retryable: true, event: journal.EventFailed},
		{name: "400 definitive", a: Attempt{Sent: true, Status: 400, StatusText: "400 Bad Request", Answer: ans}, status: journal.StatusFailed, event: journal.EventFailed},
		{name: "201", a: Attempt{Sent: true, Status: 201, StatusText: "201 Created", Answer: ans}, status: journal.StatusCommitted, event: journal.EventCommitted},
		{name: "201 with verification", a: Attempt{Sent: true, Status: 201, StatusText: "201 Created", Answer: ans, VerifyWithin: time.Minute}, status: journal.StatusCommitted, event: journal.EventCommitted, verify: true}, {name: "200, outcome rule failure", a: Attempt{Sent: true, Status: 200, StatusText: "200 OK", Answer: kind(rules.OutcomeFailure)}, status: journal.StatusFailed, event: journal.EventFailed},
		{name: "200, outcome rule retryable", a: Attempt{Sent: true, Status: 200, StatusText: "200 OK", Answer: kind(rules.OutcomeRetryable)}, status: journal.StatusFailed, retryable: true, event: journal.EventFailed},
		{name: "409, outcome rule already done", a: Attempt{Sent: true, Status: 409, StatusText: "409 Conflict", Answer: kind(rules.OutcomeAlreadyDone)}, status: journal.StatusCommitted, event: journal.EventCommitted},
		{name: "202, outcome rule accepted", a: Attempt{Sent: true, Status: 202, StatusText: "202 Accepted", Answer: kind(rules.OutcomeAccepted)}, status: journal.StatusCommitted, event: journal.EventCommitted},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cur := stepIn(journal.StatusStarted, nil)
			ch := Outcome(*cur, tc.a, testNow)
			allowed(t, cur, ch)
			st := ch.Step
			if st.Status != tc.status || st.Retryable != tc.retryable || ch.Event != tc.event || ch.Claim || (!st.VerifyBy.IsZero()) != tc.verify {
				t.Fatalf("outcome = %s retryable %v event %s verify-by %v", st.Status, st.Retryable, ch.Event, st.VerifyBy)
			}
			if tc.status == journal.StatusCommitted && (st.OperationID != "op" || st.Response == nil) {
				t.Fatalf("committed without its answer: %+v", st)
			}
		})
	}
}

func TestResponseHashChange(t *testing.T) {
	cur := stepIn(journal.StatusCommitted, func(s *journal.Step) { s.Response = &journal.Response{Status: 200, Truncated: true} })
	ch, ok := ResponseHashed(*cur, "abc")
	allowed(t, cur, ch)
	if !ok || ch.Step.Response.BodyHash != "abc" || cur.Response.BodyHash != "" || ch.Event != journal.EventResponseHashed {
		t.Fatalf("hash change: %+v ok=%v (the current record must stay untouched)", ch, ok)
	}
	if _, ok := ResponseHashed(ch.Step, "abc"); ok {
		t.Fatal("a recorded hash was recorded again")
	}
}

func TestVerifyFinishChange(t *testing.T) {
	pending := stepIn(journal.StatusCommitted, func(s *journal.Step) { s.VerifyBy, s.Response = testNow, &journal.Response{Status: 201} })
	for _, visible := range []bool{true, false} {
		t.Run(fmt.Sprintf("visible=%v", visible), func(t *testing.T) {
			ch, ok := VerifyFinish(*pending, visible, "GET 200", time.Minute)
			if !ok {
				t.Fatal("no change")
			}
			allowed(t, pending, ch)
			if !ch.Step.VerifyBy.IsZero() || (ch.Step.Status == journal.StatusVerified) != visible || ch.Step.Held() == visible {
				t.Fatalf("change = %+v", ch.Step)
			}
		})
	}
	for name, cur := range map[string]*journal.Step{
		"resolved meanwhile": stepIn(journal.StatusCommitted, nil),
		"verified already":   stepIn(journal.StatusVerified, nil),
		"started":            stepIn(journal.StatusStarted, nil),
	} {
		if _, ok := VerifyFinish(*cur, true, "", time.Minute); ok {
			t.Errorf("%s: changed", name)
		}
	}
}

// TestVerifyClaimChange: a pending verification is claimed only when
// another verifier's shared lease lapsed; never one that is ours, whose
// lease runs, that is process-local (bbolt), finished or held.
func TestVerifyClaimChange(t *testing.T) {
	pending := func(mod func(*journal.Step)) *journal.Step {
		return stepIn(journal.StatusCommitted, func(s *journal.Step) {
			s.VerifyBy, s.Response, s.Epoch, s.LeaseUntil, s.ReadAt = testNow.Add(time.Hour), &journal.Response{Status: 201}, 9, testNow, testNow.Add(time.Second)
			if mod != nil {
				mod(s)
			}
		})
	}
	tests := []struct {
		name           string
		step           *journal.Step
		claim, running bool
	}{
		{name: "another verifier's lease lapsed", step: pending(nil), claim: true},
		{name: "lapsed exactly now", step: pending(func(s *journal.Step) { s.ReadAt = s.LeaseUntil }), claim: true},
		{name: "another verifier's lease runs", step: pending(func(s *journal.Step) { s.LeaseUntil = testNow.Add(2 * time.Second) }), running: true},
		{name: "our own claim, lease lapsed", step: pending(func(s *journal.Step) { s.Epoch = 1 })},
		{name: "our own claim, lease running", step: pending(func(s *journal.Step) { s.Epoch, s.LeaseUntil = 1, testNow.Add(2*time.Second) }), running: true},
		{name: "bbolt: process-local lease", step: pending(func(s *journal.Step) { s.LeaseUntil = time.Time{} })},
		{name: "verification finished", step: pending(func(s *journal.Step) { s.VerifyBy = time.Time{} })},
		{name: "verified", step: pending(func(s *journal.Step) { s.Status, s.VerifyBy = journal.StatusVerified, time.Time{} })},
		{name: "held", step: pending(func(s *journal.Step) { s.Hold = journal.HoldNeedsReview })},
		{name: "started", step: stepIn(journal.StatusStarted, func(s *journal.Step) { s.Epoch, s.LeaseUntil, s.ReadAt = 9, testNow, testNow.Add(time.Second) })},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ch, ok := VerifyClaim(*tc.step, 1, 15*time.Second)
			if ok != tc.claim {
				t.Fatalf("claimed = %v, want %v", ok, tc.claim)
			}
			if got := VerifyLeaseRunning(tc.step); got != tc.running {
				t.Errorf("VerifyLeaseRunning = %v, want %v", got, tc.running)
			}
			if !ok {
				return
			}
			allowed(t, tc.step, ch)
			if !ch.Claim || ch.Lease != 15*time.Second || ch.Event != journal.EventTakenOver ||
				ch.Step.Status != journal.StatusCommitted || !ch.Step.VerifyBy.Equal(tc.step.VerifyBy) {
				t.Fatalf("claim = %+v", ch)
			}
		})
	}
}

// TestAbandonChangeMatrix: the background resolver never sends; what it
// records follows what the lookup said.
func TestAbandonChangeMatrix(t *testing.T) {
	found := &Found{OperationID: "op", Evidence: "lookup GET 200"}
	tests := []struct {
		name   string
		lookup LookupAnswer
		found  *Found
		status journal.Status
		hold   journal.Hold
		event  journal.EventType
	}{
		{name: "no lookup", lookup: LookupNotAsked, status: journal.StatusStarted, hold: journal.HoldNeedsReview, event: journal.EventAbandoned},
		{name: "lookup could not tell", lookup: LookupUnknown, status: journal.StatusStarted, hold: journal.HoldNeedsReview, event: journal.EventAbandoned},
		{name: "lookup found it", lookup: LookupFound, found: found, status: journal.StatusCommitted, event: journal.EventRecovered},
		{name: "lookup found nothing", lookup: LookupAbsent, status: journal.StatusFailed, event: journal.EventAbandoned},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cur := stepIn(journal.StatusStarted, nil)
			ch, ok := Abandon(*cur, tc.lookup, tc.found, "lookup said so", time.Minute, testNow)
			if !ok {
				t.Fatal("no change")
			}
			allowed(t, cur, ch)
			if ch.Claim || ch.Step.Status != tc.status || ch.Step.Hold != tc.hold || ch.Event != tc.event || ch.Step.Attempt != cur.Attempt {
				t.Fatalf("change = %+v (a background resolution never claims or sends)", ch)
			}
			if tc.hold != journal.HoldNone && ch.Step.HoldReason != ReasonAbandoned {
				t.Fatalf("hold reason %q", ch.Step.HoldReason)
			}
			if tc.status == journal.StatusFailed && !ch.Step.Retryable {
				t.Fatal("absent must leave the step retryable: the caller's retry sends it")
			}
		})
	}
	for name, cur := range map[string]*journal.Step{
		"held":      stepIn(journal.StatusStarted, func(s *journal.Step) { s.Hold = journal.HoldNeedsReview }),
		"committed": stepIn(journal.StatusCommitted, nil),
	} {
		if _, ok := Abandon(*cur, LookupNotAsked, nil, "", 0, testNow); ok {
			t.Errorf("%s: changed", name)
		}
	}
}

// TestMCPOutcomeMatrix classifies every kind of tools/call attempt: a
// tool that did not run goes back to prepared (bound to the arguments
// where an approval may be needed), an answer that does not say stays
// started, and a result, isError included, commits.
func TestMCPOutcomeMatrix(t *testing.T) {
	ans := Answer{Response: &journal.Response{Status: 200}, OperationID: "op"}
	ok := Attempt{Sent: true, Status: 200, StatusText: "200 OK", Answer: ans}
	tests := []struct {
		name    string
		v       MCPVerdict
		status  journal.Status
		event   journal.EventType
		rebound bool
		verify  bool
	}{
		{name: "nothing sent", v: MCPVerdict{Attempt: Attempt{Err: errors.New("dial refused")}}, status: journal.StatusFailed, event: journal.EventFailed},
		{name: "5xx", v: MCPVerdict{Attempt: Attempt{Sent: true, Status: 502, StatusText: "502 Bad Gateway"}}, status: journal.StatusStarted, event: journal.EventOutcomeUnknown},
		{name: "4xx, no JSON-RPC answer", v: MCPVerdict{Attempt: Attempt{Sent: true, Status: 404, StatusText: "404 Not Found"}}, status: journal.StatusPrepared, event: journal.EventNotExecuted},
		{name: "protocol error", v: MCPVerdict{Attempt: ok, Answered: true, Outcome: mcp.OutcomeNotExecuted, RPCError: "JSON-RPC error -32602: bad"}, status: journal.StatusPrepared, event: journal.EventNotExecuted},
		{name: "input asked, rebound", v: MCPVerdict{Attempt: ok, Answered: true, Outcome: mcp.OutcomeNotExecuted, Rebind: true, BodyHash: "b2"}, status: journal.StatusPrepared, event: journal.EventNotExecuted, rebound: true},
		{name: "internal error", v: MCPVerdict{Attempt: ok, Answered: true, Outcome: mcp.OutcomeUnknown, RPCError: "JSON-RPC error -32603: boom"}, status: journal.StatusStarted, event: journal.EventOutcomeUnknown},
		{name: "tool error", v: MCPVerdict{Attempt: Attempt{Sent: true, Status: 200, Answer: ans, VerifyWithin: time.Minute}, Answered: true, Outcome: mcp.OutcomeToolError}, status: journal.StatusCommitted, event: journal.EventCommitted},
		{name: "result", v: MCPVerdict{Attempt: ok, Answered: true, Outcome: mcp.OutcomeResult}, status: journal.StatusCommitted, event: journal.EventCommitted},
		{name: "result with verification", v: MCPVerdict{Attempt: Attempt{Sent: true, Status: 200, Answer: ans, VerifyWithin: time.Minute}, Answered: true, Outcome: mcp.OutcomeResult}, status: journal.StatusCommitted, event: journal.EventCommitted, verify: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cur := stepIn(journal.StatusStarted, nil)
			ch := MCPOutcome(*cur, tc.v, testNow)
			allowed(t, cur, ch)
			if ch.Step.Status != tc.status || ch.Event != tc.event {
				t.Fatalf("got %s/%s, want %s/%s", ch.Step.Status, ch.Event, tc.status, tc.event)
			}
			if got := ch.Step.ApprovedBodyHash == "b2"; got != tc.rebound {
				t.Errorf("rebound = %v, want %v", got, tc.rebound)
			}
			if got := !ch.Step.VerifyBy.IsZero(); got != tc.verify {
				t.Errorf("verify = %v, want %v", got, tc.verify)
			}
			if tc.status == journal.StatusCommitted && ch.Step.OperationID != "op" {
				t.Errorf("operation id = %q, want op", ch.Step.OperationID)
			}
		})
	}
}

// TestCommits: an outcome rule's kind decides before the status does.
func TestCommits(t *testing.T) {
	tests := []struct {
		code int
		kind rules.OutcomeKind
		want bool
	}{
		{201, rules.OutcomeByStatus, true}, {400, rules.OutcomeByStatus, false},
		{400, rules.OutcomeAccepted, true}, {409, rules.OutcomeAlreadyDone, true},
		{200, rules.OutcomeFailure, false}, {200, rules.OutcomeRetryable, false},
	}
	for _, tc := range tests {
		if got := Commits(tc.code, tc.kind); got != tc.want {
			t.Errorf("Commits(%d, %v) = %v, want %v", tc.code, tc.kind, got, tc.want)
		}
	}
}
