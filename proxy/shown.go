package proxy

import (
	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/rules"
)

// shownRequest adds to a step being put on hold what its operator is shown
// of the request: its query string (secret-named parameters masked) and
// every body field with its value (redact paths masked, sizes bounded; see
// rules.RequestFields). Only held steps keep it, and only while the request
// at hand is the step's own (same body hash): an approval must show what it
// lets through. Nothing is kept when key summaries are off.
func (s *Server) shownRequest(c *call, ch journal.Change) journal.Change {
	st := &ch.Step
	if s.opts.NoKeySummary || c.intent == nil || !st.Held() || st.RequestFields != nil ||
		(st.BodyHash != "" && st.BodyHash != c.intent.BodyHash) {
		return ch
	}
	st.Query = rules.ShownQuery(c.input.RawQuery)
	fields := rules.RequestFields(c.route, c.input)
	st.RequestFields = make([]journal.KeyField, len(fields))
	for i, f := range fields {
		st.RequestFields[i] = journal.KeyField(f)
	}
	return ch
}
