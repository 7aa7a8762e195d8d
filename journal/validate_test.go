package journal

import (
	"errors"
	"strings"
	"testing"
)

// TestValidate: what no backend may store is refused with ErrInvalidChange.
func TestValidate(t *testing.T) {
	ok := Step{Key: "k", Status: StatusStarted}
	tests := []struct {
		name string
		key  string
		edit func(*Step)
		bad  bool
	}{
		{name: "started step", key: "k"},
		{name: "empty key", key: "", bad: true},
		{name: "oversized key", key: strings.Repeat("k", MaxKeyLen+1), bad: true},
		{name: "another key", key: "k2", bad: true},
		{name: "unknown status", key: "k", edit: func(s *Step) { s.Status = StatusFailed + 1 }, bad: true},
		{name: "unknown hold", key: "k", edit: func(s *Step) { s.Hold = HoldNeedsReview + 1 }, bad: true},
		{name: "committed without response or evidence", key: "k", edit: func(s *Step) { s.Status = StatusCommitted }, bad: true},
		{name: "committed with evidence", key: "k", edit: func(s *Step) { s.Status, s.Evidence = StatusCommitted, "lookup found it" }},
		{name: "oversized workflow", key: "k", edit: func(s *Step) { s.Workflow = strings.Repeat("w", MaxWorkflowLen+1) }, bad: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := ok
			if tc.edit != nil {
				tc.edit(&s)
			}
			if tc.key != "k" && tc.key != "k2" {
				s.Key = tc.key
			}
			err := Validate(tc.key, &s)
			if got := errors.Is(err, ErrInvalidChange); got != tc.bad {
				t.Fatalf("Validate = %v, want refused %v", err, tc.bad)
			}
		})
	}
}
