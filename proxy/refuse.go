package proxy

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/toolguard/toolguard/egress"
	"github.com/toolguard/toolguard/problem"
	"github.com/toolguard/toolguard/rules"
)

// refusal is a request the proxy refuses before any route guards it: to a
// target the egress policy forbids, with headers too large, a call no rule
// describes under unmatched: reject, a request that is not a proxy
// request. Plain requests, requests inside tunnels and CONNECTs alike.
type refusal struct {
	problem *problem.Details
	// reason is the toolguard_rejected_total label; "" counts none (the
	// refusal has no reason of that vocabulary).
	reason string
	// why is the decision line's reason; "" means the problem's detail.
	why string
}

// refuse answers a refused request, the one way every refusal before a
// route is answered: the problem with Toolguard-Outcome: blocked, counted
// as toolguard_requests_total{outcome="blocked"} (and under its reason),
// and its decision line.
func (s *Server) refuse(req *http.Request, r refusal) *http.Response {
	s.metrics.Refused(r.reason)
	why := r.why
	if why == "" {
		why = r.problem.Detail
	}
	s.logRequest(req, slog.LevelInfo, OutcomeBlocked, r.problem.Status, why)
	resp := problemResponse(req, rules.ErrorFormat{}, r.problem)
	resp.Header.Set(HeaderOutcome, OutcomeBlocked)
	return resp
}

// egressRefusal is the refusal of a target the egress policy refused.
func egressRefusal(err error) refusal {
	return refusal{problem: problem.New(problem.Rejected, "", err.Error()), reason: "egress"}
}

// refusedByEgress returns the egress policy's refusal that err holds, or
// nil.
func refusedByEgress(err error) *egress.Error {
	var e *egress.Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}
