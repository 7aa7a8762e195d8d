package notify

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
)

const testKey = "3f9a1c2b4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8"

func heldEvent() journal.Event {
	return journal.Event{Seq: 7, KeySeq: 1, Time: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), Key: testKey,
		Type: journal.EventHeld, To: journal.StatusPrepared, Hold: journal.HoldAwaitingApproval,
		Reason: "route requires approval", Note: "never sent", Epoch: 3, Fence: 9}
}

func heldStep() *journal.Step {
	return &journal.Step{Key: testKey, API: "payments", Route: "create_invoice", Workflow: "wf-1",
		Status: journal.StatusPrepared, Hold: journal.HoldAwaitingApproval, HoldReason: "approval_required",
		CredentialMAC: "mac-never-sent", BodyHash: "hash-never-sent",
		KeyFields:     []journal.KeyField{{Field: "customer", Value: `"cus_<1>"`}, {Field: "card", Value: `"[redacted]"`}},
		RequestFields: []journal.KeyField{{Field: "amount", Value: "4200"}}}
}

// TestPayloadGolden pins the JSON body: the event, the step's api, route,
// workflow and key summary, the console link; never the operator's note,
// the credential MAC, hashes or the request's other fields.
func TestPayloadGolden(t *testing.T) {
	tests := []struct {
		name string
		ev   journal.Event
		kind Kind
		step *journal.Step
		want string
	}{
		{name: "held", ev: heldEvent(), kind: KindHeld, step: heldStep(),
			want: `{"type":"step.held","seq":7,"time":"2026-03-01T12:00:00Z","event":"held","key":"` + testKey + `",` +
				`"api":"payments","route":"create_invoice","workflow":"wf-1","status":"prepared","hold":"awaiting_approval",` +
				`"reason":"route requires approval","key_fields":[{"field":"customer","value":"\"cus_<1>\""},{"field":"card","value":"\"[redacted]\""}],` +
				`"console_url":"http://127.0.0.1:8481/ui/#/step/` + testKey + `"}`},
		{name: "settled", kind: KindSettled, step: heldStep(),
			ev: journal.Event{Seq: 12, Time: time.Date(2026, 3, 1, 12, 5, 0, 0, time.UTC), Key: testKey, Type: journal.EventApproved,
				From: journal.StatusPrepared, To: journal.StatusPrepared, Reason: "operator approved", Note: "ok by me"},
			want: `{"type":"step.settled","seq":12,"time":"2026-03-01T12:05:00Z","event":"approved","key":"` + testKey + `",` +
				`"api":"payments","route":"create_invoice","workflow":"wf-1","status":"prepared","hold":"",` +
				`"reason":"operator approved","key_fields":[{"field":"customer","value":"\"cus_<1>\""},{"field":"card","value":"\"[redacted]\""}],` +
				`"console_url":"http://127.0.0.1:8481/ui/#/step/` + testKey + `"}`},
		{name: "step gone", ev: heldEvent(), kind: KindHeld,
			want: `{"type":"step.held","seq":7,"time":"2026-03-01T12:00:00Z","event":"held","key":"` + testKey + `",` +
				`"status":"prepared","hold":"awaiting_approval","reason":"route requires approval",` +
				`"console_url":"http://127.0.0.1:8481/ui/#/step/` + testKey + `"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body, err := FormatJSON.Body(newPayload(tc.ev, tc.kind, tc.step, "http://127.0.0.1:8481/ui/"))
			if err != nil {
				t.Fatal(err)
			}
			if string(body) != tc.want {
				t.Errorf("body:\n got %s\nwant %s", body, tc.want)
			}
			var back Payload
			if err := json.Unmarshal(body, &back); err != nil || back.Type != tc.kind || back.Seq != tc.ev.Seq {
				t.Errorf("the body does not decode back: %+v, %v", back, err)
			}
		})
	}
}

// TestSlackGolden pins the Slack message: api.route, hold and reason, the
// key's prefix, the key summary and the console link, mrkdwn escaped.
func TestSlackGolden(t *testing.T) {
	review := heldEvent()
	review.Hold, review.Reason = journal.HoldNeedsReview, "outcome unknown, cannot be queried, irreversible"
	tests := []struct {
		name string
		ev   journal.Event
		kind Kind
		want string
	}{
		{name: "held for approval", ev: heldEvent(), kind: KindHeld, want: `{
  "text": "Held for approval: payments.create_invoice, key 3f9a1c2b4d5e (route requires approval)",
  "blocks": [
    {"type": "section", "text": {"type": "mrkdwn", "text": "*Held for approval*: ` + "`payments.create_invoice`" + `\n*Reason:* route requires approval\n*Key:* ` + "`3f9a1c2b4d5e`" + `"}},
    {"type": "section", "text": {"type": "mrkdwn", "text": "*Key fields*\n` + "`customer` `\\\"cus_&lt;1&gt;\\\"`\\n`card` `\\\"[redacted]\\\"`" + `"}},
    {"type": "section", "text": {"type": "mrkdwn", "text": "<http://127.0.0.1:8481/ui/#/step/` + testKey + `|Open in the toolguard console>"}}
  ]
}`},
		{name: "held for review", ev: review, kind: KindHeld, want: `{
  "text": "Held for review: payments.create_invoice, key 3f9a1c2b4d5e (outcome unknown, cannot be queried, irreversible)",
  "blocks": [
    {"type": "section", "text": {"type": "mrkdwn", "text": "*Held for review*: ` + "`payments.create_invoice`" + `\n*Reason:* outcome unknown, cannot be queried, irreversible\n*Key:* ` + "`3f9a1c2b4d5e`" + `"}},
    {"type": "section", "text": {"type": "mrkdwn", "text": "*Key fields*\n` + "`customer` `\\\"cus_&lt;1&gt;\\\"`\\n`card` `\\\"[redacted]\\\"`" + `"}},
    {"type": "section", "text": {"type": "mrkdwn", "text": "<http://127.0.0.1:8481/ui/#/step/` + testKey + `|Open in the toolguard console>"}}
  ]
}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body, err := FormatSlack.Body(newPayload(tc.ev, tc.kind, heldStep(), "http://127.0.0.1:8481/ui/"))
			if err != nil {
				t.Fatal(err)
			}
			var want bytes.Buffer
			if err := json.Compact(&want, []byte(tc.want)); err != nil {
				t.Fatalf("want: %v", err)
			}
			if string(body) != want.String() {
				t.Errorf("body:\n got %s\nwant %s", body, want.String())
			}
			if bytes.Contains(body, []byte("never")) || bytes.Contains(body, []byte("4200")) {
				t.Errorf("the message holds a note, a hash or a request field: %s", body)
			}
		})
	}
}

func TestKindOf(t *testing.T) {
	tests := []struct {
		typ  journal.EventType
		hold journal.Hold
		want Kind
		ok   bool
	}{
		{journal.EventHeld, journal.HoldAwaitingApproval, KindHeld, true},
		{journal.EventHeld, journal.HoldNeedsReview, KindHeld, true},
		{journal.EventAbandoned, journal.HoldNeedsReview, KindHeld, true},
		{journal.EventAbandoned, journal.HoldNone, 0, false}, // settled in the background, nothing held
		{journal.EventApproved, journal.HoldNone, KindSettled, true},
		{journal.EventResolved, journal.HoldNone, KindSettled, true},
		{journal.EventStarted, journal.HoldNone, 0, false},
		{journal.EventCommitted, journal.HoldNone, 0, false},
		{journal.EventTakenOver, journal.HoldNeedsReview, 0, false}, // recorded beside a hold's own event
		{journal.EventVersionChanged, journal.HoldNone, 0, false},
	}
	for _, tc := range tests {
		got, ok := KindOf(journal.Event{Type: tc.typ, Hold: tc.hold})
		if got != tc.want || ok != tc.ok {
			t.Errorf("KindOf(%s, %q) = %v, %v; want %v, %v", tc.typ, tc.hold, got, ok, tc.want, tc.ok)
		}
	}
}
