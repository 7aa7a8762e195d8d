package journal

import (
	"fmt"
	"time"
)

// Event is one entry of the append-only event log. Seq is strictly
// increasing across the life of the journal.
type Event struct {
	Seq uint64 `json:"seq"`
	// KeySeq is the event's number among its key's events: 1, 2, 3...
	// without gaps (events recorded before it existed have 0).
	KeySeq uint64    `json:"key_seq"`
	Time   time.Time `json:"time"`
	Key    string    `json:"key"`
	Type   EventType `json:"type"`
	From   Status    `json:"from,omitempty"`
	To     Status    `json:"to,omitempty"`
	Hold   Hold      `json:"hold,omitempty"`
	Reason string    `json:"reason,omitempty"`
	// Note is an operator's free text, carried by review decisions.
	Note string `json:"note,omitempty"`
	// Epoch and Fence of the writer that caused the event.
	Epoch uint64 `json:"epoch,omitempty"`
	Fence uint64 `json:"fence,omitempty"`
}

// ExpiredReason is the reason of the EventExpired event that records the
// removal of the expired hold s (Store.ExpireHolds).
func ExpiredReason(s *Step) string {
	return fmt.Sprintf("held for approval (%s) since %s and never approved: removed unsent; a retry is a new request",
		s.HoldReason, s.UpdatedAt.UTC().Format(time.RFC3339))
}
