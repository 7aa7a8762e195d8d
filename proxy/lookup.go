package proxy

import (
	"context"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/rules"
	"github.com/toolguard/toolguard/verifiers"
)

// lookupResult is the evidence of a lookup that found the effect.
type lookupResult struct {
	operationID string
	evidence    string
}

// lookupFor asks the provider whether the step's call took effect and
// remembers the answer for the step's current fence.
func (s *Server) lookupFor(c *call, st *journal.Step) {
	if c.mcp != nil {
		s.mcpLookupFor(c, st)
		return
	}
	res := s.verifier.Lookup(context.WithoutCancel(c.in.Context()), c.route.Lookup, s.values(c, st), verifiers.CredentialHeaders(c.route.API, c.in.Header))
	c.lookupFence = st.Fence
	switch res.Answer {
	case verifiers.Yes:
		c.lookup = LookupFound
		c.lookupFound = &lookupResult{operationID: res.OperationID, evidence: "lookup " + res.Evidence}
	case verifiers.No:
		c.lookup = LookupAbsent
	default:
		c.lookup = LookupUnknown
	}
	c.lookupEvidence = "lookup " + res.Evidence
	s.log.Info("lookup", logKey, st.Key, logRoute, c.route.Name, "answer", c.lookup.String(), "evidence", res.Evidence)
}

// values are the template values for a step's lookups and probes.
func (s *Server) values(c *call, st *journal.Step) rules.Values {
	v := rules.Values{Key: st.Key, OperationID: st.OperationID, Path: c.params}
	if c.intent != nil {
		v.Body = c.intent.Doc
	}
	if st.Response != nil && !st.Response.Truncated {
		v.Response = st.Response.Body
	}
	return v
}
