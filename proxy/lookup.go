package proxy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"time"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/lifecycle"
	"github.com/toolguard/toolguard/rules"
	"github.com/toolguard/toolguard/verifiers"
)

// recoveredResponse is the stored response of a step a lookup found: the
// found object (answer, lookup.answer) in the provider's shape, with the status the route names,
// so that the recovered answer and every replay show what a first call
// would have. nil when the rule names no answer or the lookup's answer
// held none.
func recoveredResponse(r *rules.Route, answer []byte) *journal.Response {
	if answer == nil || r.Lookup == nil || r.Lookup.Answer == nil {
		return nil
	}
	status := r.Lookup.Answer.Status
	if status == 0 {
		status = http.StatusOK
	}
	sum := sha256.Sum256(answer)
	return &journal.Response{
		Status:   status,
		Header:   http.Header{"Content-Type": {"application/json"}},
		Body:     answer,
		BodyHash: hex.EncodeToString(sum[:]),
	}
}

// lookupSettle is a route's lookup.settle; zero without a lookup.
func lookupSettle(r *rules.Route) time.Duration {
	if r == nil || r.Lookup == nil {
		return 0
	}
	return r.Lookup.Settle
}

// lookupFor asks the provider whether the step's call took effect and
// remembers the answer for the step's current fence.
func (s *Server) lookupFor(c *call, st *journal.Step) {
	end := s.trace.Lookup(c.in.Context(), c.route, st.Key)
	defer func() { end(c.lookup) }()
	c.carrier.lookup(c, st)
}

// lookup asks a REST API's lookup request, within the API's lookup.rate.
func (r restCarrier) lookup(c *call, st *journal.Step) {
	s := r.s
	if ok, wait := s.lookupBudget.Take(c.route.API.Name, c.route.Lookup.Rate, s.now()); !ok {
		c.lookup, c.lookupFence, c.lookupWait = lifecycle.LookupThrottled, st.Fence, wait
		c.lookupEvidence = "lookup not sent: lookup.rate budget spent"
		s.log.Info("lookup", logKey, st.Key, logRoute, c.route.Name, "answer", c.lookup.String())
		return
	}
	res := s.verifier.Lookup(context.WithoutCancel(c.in.Context()), c.route.Lookup, s.values(c, st), verifiers.CredentialHeaders(c.route.API, c.in.Header))
	c.lookupFence = st.Fence
	switch res.Answer {
	case verifiers.Yes:
		c.lookup = lifecycle.LookupFound
		c.lookupFound = &lifecycle.Found{OperationID: res.OperationID, Evidence: "lookup " + res.Evidence,
			Response: recoveredResponse(c.route, res.Recovered)}
	case verifiers.No:
		c.lookup = lifecycle.LookupAbsent
	default:
		c.lookup = lifecycle.LookupUnknown
	}
	c.lookupEvidence = "lookup " + res.Evidence
	s.log.Info("lookup", logKey, st.Key, logRoute, c.route.Name, "answer", c.lookup.String(), "evidence", res.Evidence)
}

// lookupAbsent lists the request values the route's lookup reads that the
// call lacks (see rules.Lookup.AbsentRefs): nil when the lookup can be
// made, or the route has none.
func (c *call) lookupAbsent() []string {
	if c.route.Lookup == nil || c.intent == nil {
		return nil
	}
	return c.route.Lookup.AbsentRefs(rules.Values{Body: c.intent.Doc, Path: c.params})
}

// values are the template values for a step's lookups and probes.
func (s *Server) values(c *call, st *journal.Step) rules.Values {
	v := rules.Values{Key: st.Key, OperationID: st.OperationID, Path: c.params, Stored: st.RecoveryValues}
	if c.intent != nil {
		v.Body = c.intent.Doc
	}
	if st.Response != nil && !st.Response.Truncated {
		v.Response = st.Response.Body
	}
	return v
}
