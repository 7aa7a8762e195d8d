package journal

import "time"

// Event is one entry of the append-only event log. Seq is strictly
// increasing across the life of the journal.
type Event struct {
	Seq uint64 `json:"seq"`
	// KeySeq is the per-key number, gapless: 1, 2, 3... per key.
	KeySeq uint64    `json:"key_seq"`
	Time   time.Time `json:"time"`
	Key    string    `json:"key"`
	Type   string    `json:"type"`
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
