package journal

import (
	"encoding/json"
	"testing"
	"time"
)

// TestStatusNames: every stored status prints, parses and round-trips as
// JSON under its name; other names and values are refused or printed as
// numbers.
func TestStatusNames(t *testing.T) {
	for _, s := range []Status{StatusPrepared, StatusStarted, StatusCommitted, StatusVerified, StatusFailed} {
		got, err := ParseStatus(s.String())
		if err != nil || got != s {
			t.Errorf("ParseStatus(%q) = %v, %v; want %v", s.String(), got, err, s)
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var back Status
		if err := json.Unmarshal(b, &back); err != nil || back != s {
			t.Errorf("JSON %s decoded as %v, %v; want %v", b, back, err, s)
		}
	}
	for _, name := range []string{"", "unknown", "Committed"} {
		if _, err := ParseStatus(name); err == nil {
			t.Errorf("ParseStatus(%q) accepted", name)
		}
	}
	var s Status
	if err := json.Unmarshal([]byte(`"done"`), &s); err == nil {
		t.Error(`status "done" decoded without an error`)
	}
	if got := Status(9).String(); got != "status(9)" {
		t.Errorf("Status(9) = %q", got)
	}
}

// TestHoldNames: every hold prints, parses and round-trips as JSON under
// its name, HoldNone as the empty string.
func TestHoldNames(t *testing.T) {
	for _, h := range []Hold{HoldNone, HoldAwaitingApproval, HoldNeedsReview} {
		got, err := ParseHold(h.String())
		if err != nil || got != h {
			t.Errorf("ParseHold(%q) = %v, %v; want %v", h.String(), got, err, h)
		}
		b, err := json.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		var back Hold
		if err := json.Unmarshal(b, &back); err != nil || back != h {
			t.Errorf("JSON %s decoded as %v, %v; want %v", b, back, err, h)
		}
	}
	var h Hold
	if err := json.Unmarshal([]byte(`"held"`), &h); err == nil {
		t.Error(`hold "held" decoded without an error`)
	}
	if got := Hold(7).String(); got != "hold(7)" {
		t.Errorf("Hold(7) = %q", got)
	}
}

// TestStepClasses: which steps have a claim to lease, an outcome, a hold.
func TestStepClasses(t *testing.T) {
	verifyBy := time.Unix(1, 0)
	tests := []struct {
		name                     string
		step                     Step
		leasable, terminal, held bool
	}{
		{name: "prepared", step: Step{Status: StatusPrepared}},
		{name: "started", step: Step{Status: StatusStarted}, leasable: true},
		{name: "committed", step: Step{Status: StatusCommitted}, terminal: true},
		{name: "committed, verifying", step: Step{Status: StatusCommitted, VerifyBy: verifyBy}, leasable: true, terminal: true},
		{name: "verified", step: Step{Status: StatusVerified}, terminal: true},
		{name: "failed", step: Step{Status: StatusFailed}, terminal: true},
		{name: "failed, retryable", step: Step{Status: StatusFailed, Retryable: true}},
		{name: "started, held", step: Step{Status: StatusStarted, Hold: HoldNeedsReview}, leasable: true, held: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.step.Leasable(); got != tc.leasable {
				t.Errorf("Leasable = %v, want %v", got, tc.leasable)
			}
			if got := tc.step.Terminal(); got != tc.terminal {
				t.Errorf("Terminal = %v, want %v", got, tc.terminal)
			}
			if got := tc.step.Held(); got != tc.held {
				t.Errorf("Held = %v, want %v", got, tc.held)
			}
		})
	}
}
