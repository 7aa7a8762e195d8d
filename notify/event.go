package notify

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/toolguard/toolguard/journal"
)

// Kind is what a notification is about. The zero value is KindHeld.
type Kind int

// Notification kinds.
const (
	// KindHeld: a step was put on hold for an operator, "step.held".
	KindHeld Kind = iota
	// KindSettled: an operator approved or resolved a held step,
	// "step.settled".
	KindSettled
)

var kindNames = []string{"step.held", "step.settled"}

func (k Kind) String() string {
	if k < 0 || int(k) >= len(kindNames) {
		return fmt.Sprintf("Kind(%d)", int(k))
	}
	return kindNames[k]
}

// ParseKind parses "step.held" or "step.settled".
func ParseKind(s string) (Kind, error) {
	for i, n := range kindNames {
		if s == n {
			return Kind(i), nil
		}
	}
	return 0, fmt.Errorf("unknown notification kind %q (want step.held or step.settled)", s)
}

// MarshalText implements encoding.TextMarshaler.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseKind.
func (k *Kind) UnmarshalText(b []byte) error {
	v, err := ParseKind(string(b))
	if err == nil {
		*k = v
	}
	return err
}

// KindOf says whether the journal event e is notified, and as what: a
// hold (journal.EventHeld, or journal.EventAbandoned that left a hold) is
// KindHeld; an operator's journal.EventApproved or journal.EventResolved
// is KindSettled.
func KindOf(e journal.Event) (Kind, bool) {
	switch e.Type {
	case journal.EventHeld, journal.EventAbandoned:
		return KindHeld, e.Hold != journal.HoldNone
	case journal.EventApproved, journal.EventResolved:
		return KindSettled, true
	}
	return 0, false
}

// Payload is the JSON body of a format json delivery.
type Payload struct {
	Type Kind `json:"type"`
	// Seq is the event's seq, also sent as Toolguard-Event-Id.
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
	// Event is the journal's event type: held, abandoned, approved or
	// resolved.
	Event journal.EventType `json:"event"`
	Key   string            `json:"key"`
	// API, Route and Workflow are the step's; empty when the step is no
	// longer in the journal (retention).
	API      string `json:"api,omitempty"`
	Route    string `json:"route,omitempty"`
	Workflow string `json:"workflow,omitempty"`
	// Status and Hold are the step's after the event; Hold is empty once
	// the hold is settled.
	Status string `json:"status"`
	Hold   string `json:"hold"`
	// Reason says why, in words: why the step was held, or the operator's
	// decision ("operator resolved: committed"). Operators' notes are
	// never sent.
	Reason string `json:"reason,omitempty"`
	// KeyFields is the step's key summary, redaction applied, as the
	// console shows it; absent when the journal keeps none.
	KeyFields []journal.KeyField `json:"key_fields,omitempty"`
	// ConsoleURL is the step's page in the web console.
	ConsoleURL string `json:"console_url,omitempty"`
}

// newPayload describes event e of kind k; st is e's step, nil when the
// journal no longer has it.
func newPayload(e journal.Event, k Kind, st *journal.Step, console string) Payload {
	p := Payload{Type: k, Seq: e.Seq, Time: e.Time.UTC(), Event: e.Type, Key: e.Key,
		Status: e.To.String(), Hold: e.Hold.String(), Reason: e.Reason, ConsoleURL: stepURL(console, e.Key)}
	if st != nil {
		p.API, p.Route, p.Workflow, p.KeyFields = st.API, st.Route, st.Workflow, st.KeyFields
	}
	return p
}

// stepURL is the console page of key: <console>#/step/<key>.
func stepURL(console, key string) string {
	if console == "" {
		return ""
	}
	if !strings.HasSuffix(console, "/") {
		console += "/"
	}
	return console + "#/step/" + url.PathEscape(key)
}
