package proxy

import (
	"context"
	"net/http"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/lifecycle"
	"github.com/toolguard/toolguard/rules"
	"github.com/toolguard/toolguard/verifiers"
)

// lookup asks the MCP server, with the lookup tool of the rule,
// whether the step's call took effect, and remembers the answer for the
// step's current fence. It opens a session of its own with the caller's
// credential (in memory only), as any MCP client would.
func (m *mcpCall) lookup(c *call, st *journal.Step) {
	s := m.s
	l := c.route.Lookup
	c.lookupFence = st.Fence
	res, evidence := m.lookupTool(c, st, l)
	c.lookup = lifecycle.LookupUnknown
	c.lookupFound = nil
	switch {
	case res == nil || res.IsError:
	case l.Found.Match(http.StatusOK, res.Raw):
		c.lookup = lifecycle.LookupFound
		c.lookupFound = &lifecycle.Found{OperationID: l.OperationID.Extract(nil, res.Raw), Evidence: "lookup " + evidence}
	case l.Absent != nil && l.Absent.Match(http.StatusOK, res.Raw):
		c.lookup = lifecycle.LookupAbsent
	}
	c.lookupEvidence = "lookup " + evidence
	s.log.Info("lookup", logKey, st.Key, logRoute, c.route.Name, "answer", c.lookup.String(), "evidence", evidence)
}

// lookupTool calls the rule's lookup tool at the call's server.
func (m *mcpCall) lookupTool(c *call, st *journal.Step, l *rules.Lookup) (*verifiers.ToolResult, string) {
	s := m.s
	creds := verifiers.CredentialHeaders(c.route.API, c.in.Header)
	return s.tools.Call(context.WithoutCancel(c.in.Context()), m.target, creds, c.route, l.Request.Tool, s.values(c, st))
}
