package proxy

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/lifecycle"
	"github.com/toolguard/toolguard/problem"
	"github.com/toolguard/toolguard/rules"
)

// replay answers from a step's stored outcome, in the call's protocol.
func (s *Server) replay(c *call, st *journal.Step, outcome string, d lifecycle.Decision) *answer {
	s.trace.Step(c.in.Context(), st)
	return c.carrier.replay(c, st, outcome, d)
}

// replay answers a REST call from a step's stored outcome: the stored
// response, a notice where only its hash was kept, or the evidence of a
// lookup or an operator where no response was ever received.
func (r restCarrier) replay(c *call, st *journal.Step, outcome string, d lifecycle.Decision) *answer {
	s := r.s
	var resp *http.Response
	switch r := st.Response; {
	case r == nil:
		// Established by a lookup or an operator: no upstream answer exists.
		resp = s.evidenceResponse(c.in, st)
		outcome = OutcomeRecovered
	case r.Truncated:
		body, _ := json.Marshal(map[string]any{
			"toolguard":    "the original response body was larger than limits.max_stored_response; only its hash was kept",
			"status":       r.Status,
			"body_sha256":  r.BodyHash,
			"operation_id": st.OperationID,
		})
		h := r.Header.Clone()
		h.Set("Content-Type", "application/json")
		h.Set("Toolguard-Body-Truncated", "true")
		resp = bodyResponse(c.in, r.Status, h, body)
	default:
		resp = bodyResponse(c.in, r.Status, r.Header.Clone(), r.Body)
	}
	s.stamp(resp.Header, st, outcome)
	return &answer{resp: resp, outcome: outcome, decision: d, attempt: st.Attempt}
}

// stamp adds toolguard's headers to an answer from a step.
func (s *Server) stamp(h http.Header, st *journal.Step, outcome string) {
	h.Set(HeaderKey, st.Key)
	h.Set(HeaderOutcome, outcome)
	if s.opts.Retention > 0 && st.Terminal() {
		h.Set(HeaderKeyExpires, st.UpdatedAt.Add(s.opts.Retention).UTC().Format(http.TimeFormat))
	}
	if outcome == OutcomeReplayed {
		h.Set(HeaderReplayed, "true")
	}
}

// evidenceResponse answers a committed step for which no upstream response
// was ever received: it was established by a lookup or an operator. It
// carries the outcome and the operation id only: an operator's note is
// operator-to-operator text and stays in the journal's event.
func (s *Server) evidenceResponse(req *http.Request, st *journal.Step) *http.Response {
	body, _ := json.Marshal(struct {
		Resolved    string `json:"resolved"`
		OperationID string `json:"operation_id"`
	}{st.Status.String(), st.OperationID})
	h := http.Header{"Content-Type": {"application/json"}}
	return bodyResponse(req, http.StatusOK, h, append(body, '\n'))
}

// recoveredAnswer answers from a lookup's evidence.
func (s *Server) recoveredAnswer(c *call, st *journal.Step, d lifecycle.Decision) *answer {
	return s.replay(c, st, OutcomeRecovered, d)
}

// blocked answers a held step with the problem its hold calls for.
func (s *Server) blocked(c *call, st *journal.Step, d lifecycle.Decision) *answer {
	key := st.Key
	var p *problem.Details
	switch {
	case d.Hold == journal.HoldAwaitingApproval && d.Reason == lifecycle.ReasonBudget:
		p = problem.New(problem.OverBudget, key, "the route's budget of calls is spent for now; an operator may let this call through: toolguard review approve "+key)
		p.RetryAfter = 30 * time.Second
	case d.Hold == journal.HoldAwaitingApproval:
		p = problem.New(problem.AwaitingApproval, key, "an operator must approve this call: toolguard review approve "+key)
		p.RetryAfter = 30 * time.Second
	case d.Reason == lifecycle.ReasonVersionChanged:
		p = problem.New(problem.VersionChanged, key, "the prompt or policy version changed in the middle of the workflow; an operator must review it")
	case d.Reason == lifecycle.ReasonRetryBudget:
		p = problem.New(problem.RetryBudget, key, "the call failed on every allowed attempt; an operator must review it")
	case d.Reason == lifecycle.ReasonNotVisible:
		p = problem.New(problem.AmbiguousEffect, key, "the call was answered but its effect never became visible; held for review")
	default:
		p = problem.New(problem.AmbiguousEffect, key, "the call may have taken effect and cannot be checked; held for review ("+d.Reason+")")
	}
	a := s.problemWith(c, p, d)
	a.outcome = OutcomeBlocked
	a.resp.Header.Set(HeaderOutcome, OutcomeBlocked)
	return a
}

func (s *Server) problem(c *call, p *problem.Details) *answer {
	return s.problemWith(c, p, lifecycle.Decision{})
}

// problemWith answers with p; a decision without a reason of its own is
// logged with the problem's detail, so every refusal says why.
func (s *Server) problemWith(c *call, p *problem.Details, d lifecycle.Decision) *answer {
	if d.Why == "" {
		d.Why = p.Detail
	}
	return c.carrier.problem(c, p, d)
}

// problem renders p as problem+json, or in the API's own error envelope
// where its rule file declares one.
func (r restCarrier) problem(c *call, p *problem.Details, d lifecycle.Decision) *answer {
	var format rules.ErrorFormat
	if c.route != nil && c.route.API != nil {
		format = c.route.API.Errors
	}
	resp := problemResponse(c.in, format, p)
	outcome := OutcomeBlocked
	if p.Key != "" {
		resp.Header.Set(HeaderKey, p.Key)
	}
	resp.Header.Set(HeaderOutcome, outcome)
	return &answer{resp: resp, outcome: outcome, decision: d}
}

// Log keys of the decision line.
const (
	logKey      = "key"
	logAPI      = "api"
	logRoute    = "route"
	logOutcome  = "outcome"
	logAction   = "action"
	logStatus   = "status"
	logAttempt  = "attempt"
	logDuration = "duration"
	logWhy      = "why"
)

// logDecision writes the one decision line of a guarded call: key, route,
// outcome and duration; never a credential, never a body.
func (s *Server) logDecision(c *call, a *answer) {
	level := slog.LevelInfo
	if a.outcome == OutcomeBlocked {
		level = slog.LevelWarn
	}
	key := ""
	if c.intent != nil {
		key = c.intent.Key
	}
	s.metrics.Request(c.route.API.Name, c.carrier.routeLabel(c), a.outcome)
	switch d := a.decision; {
	case d.Action == lifecycle.ActionRecordFound:
		s.metrics.Recovery(lifecycle.StrategyOf(c.route), "found")
	case d.Recovered:
		s.metrics.Recovery(lifecycle.StrategyOf(c.route), "resent")
	case d.Action == lifecycle.ActionHold && (d.Reason == lifecycle.ReasonOutcomeUnknown || d.Reason == lifecycle.ReasonLookupUnknown || d.Reason == lifecycle.ReasonKeyExpired):
		s.metrics.Recovery(lifecycle.StrategyOf(c.route), "held")
	}
	s.log.LogAttrs(c.in.Context(), level, "guarded call",
		slog.String(logKey, key),
		slog.String(logAPI, c.route.API.Name),
		slog.String(logRoute, c.route.Name),
		slog.String(logOutcome, a.outcome),
		slog.String(logAction, a.decision.Action.String()),
		slog.Int(logStatus, a.resp.StatusCode),
		slog.Int(logAttempt, a.attempt),
		slog.Duration(logDuration, time.Since(c.start)),
		slog.String(logWhy, decisionWhy(c.route, a.decision)),
	)
	s.traceDecision(c, a)
}

// decisionWhy is the why of a guarded call's decision line: for an
// unlisted write, that no route matched, and what was decided past a new
// intent's forward.
func decisionWhy(r *rules.Route, d lifecycle.Decision) string {
	if !r.Unlisted() {
		return d.Why
	}
	why := "no route of " + r.API.Name + " matched: unlisted: guard"
	if d.Action == lifecycle.ActionForward && !d.Recovered && d.Why == lifecycle.WhyNewIntent {
		return why
	}
	return why + "; " + d.Why
}

// problemResponse is p in the error format f (the zero format is RFC
// 9457's), as an answer for goproxy to send.
func problemResponse(req *http.Request, f rules.ErrorFormat, p *problem.Details) *http.Response {
	status, h, body := problem.Render(f, p)
	return bodyResponse(req, status, h, body)
}

// bodyResponse is an answer held in memory, for goproxy to send.
func bodyResponse(req *http.Request, status int, h http.Header, body []byte) *http.Response {
	if h == nil {
		h = http.Header{} // a stored answer that kept no header
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	return &http.Response{
		Status:        strconv.Itoa(status) + " " + http.StatusText(status),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}
