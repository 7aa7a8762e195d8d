package proxy

import (
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/rules"
)

// call is one guarded request as it moves through the pipeline. It keeps
// the agent's inbound request apart from what is sent upstream.
type call struct {
	in     *http.Request
	route  *rules.Route
	params map[string]string
	body   []byte
	intent *rules.Intent
	start  time.Time

	// lookup is the latest lookup made for the step at lookupFence.
	lookup      LookupAnswer
	lookupFence uint64
	lookupFound *lookupResult
	// lookupEvidence describes the latest lookup, whatever it said.
	lookupEvidence string
	// versionChange describes a prompt/policy version change of the
	// workflow; "" when none.
	versionChange string
	// callerMAC identifies the caller (see credentialMAC).
	callerMAC string
	// reserved is the room c's body holds in the body budget.
	reserved int64
	// lookupWait is how long until the lookup budget has room again, when
	// a lookup was throttled.
	lookupWait time.Duration
}

// answer is what the pipeline sends back, with what to log about it.
type answer struct {
	resp     *http.Response
	outcome  string
	decision Decision
	attempt  int
}

// guard runs a request that a route describes through the pipeline.
func (s *Server) guard(req *http.Request, route *rules.Route, params map[string]string) *http.Response {
	c := &call{in: req, route: route, params: params, start: time.Now()}
	if !s.active.tryAdd(s.opts.MaxInFlight) {
		s.metrics.reject("in_flight_limit")
		p := newProblem(ProblemUnavailable, "", "too many calls in flight (limits.max_in_flight); retry shortly")
		p.RetryAfter = time.Second
		a := s.problem(c, p)
		s.logDecision(c, a)
		return a.resp
	}
	defer s.active.Done()
	defer s.releaseBody(c)
	a := s.prepare(c)
	if a == nil {
		a = s.run(c)
	}
	s.logDecision(c, a)
	return a.resp
}

// prepare reads the body and derives the key; it answers only on bad input.
func (s *Server) prepare(c *call) *answer {
	if s.draining.Load() {
		s.metrics.reject("draining")
		return s.problem(c, newProblem(ProblemUnavailable, "", "toolguard is shutting down; retry shortly"))
	}
	if a := s.readBody(c); a != nil {
		return a
	}
	in := rules.Input{
		ContentType: c.in.Header.Get("Content-Type"),
		Body:        c.body,
		RawQuery:    c.in.URL.RawQuery,
		PathValues:  c.params,
		Workflow:    c.in.Header.Get(HeaderWorkflow),
		Host:        c.in.URL.Host,
	}
	if h := c.route.API.Credential; h != "" {
		in.Credential = c.in.Header.Get(h)
	}
	intent, err := s.deriver.Derive(c.route, in)
	if err != nil {
		s.metrics.reject("invalid_body")
		return s.problem(c, newProblem(ProblemInvalidBody, "", err.Error()))
	}
	c.intent = intent
	c.callerMAC = s.credentialMAC(c.route.API, c.in.Header)
	s.parked.lend(c.callerMAC, c.route.API, c.in.Header)
	return nil
}

// run decides and acts until the request has an answer: a decision may
// need a lookup or a wait first, after which the step is decided afresh.
func (s *Server) run(c *call) *answer {
	key := c.intent.Key
	waitUntil := c.start.Add(s.opts.InFlightWait)
	for {
		if st, err := s.journal.Get(key); err == nil && st.Terminal() && !st.Held() {
			return s.replay(c, &st, OutcomeReplayed, Decision{Action: ActionReplay, Why: "outcome stored"})
		}
		d, st, fl, wait, err := s.decide(c)
		if err != nil {
			return s.journalFailure(c, err)
		}
		switch d.Action {
		case ActionReplay:
			return s.replay(c, &st, OutcomeReplayed, d)
		case ActionForward:
			a, err := s.forward(c, st, fl, d)
			if errors.Is(err, journal.ErrFenced) {
				continue // someone took the step over: answer from its record
			}
			if err != nil {
				return s.journalFailure(c, err)
			}
			return a
		case ActionWait:
			if !s.await(wait, waitUntil) {
				p := newProblem(ProblemInProgress, key, "a call with this key is still in flight; retry later")
				p.RetryAfter = time.Second
				return s.problem(c, p)
			}
		case ActionLookup:
			s.lookupFor(c, &st)
		case ActionRecordFound:
			s.afterCommit(c, st)
			return s.recoveredAnswer(c, &st, d)
		case ActionHold, ActionBlock:
			return s.blocked(c, &st, d)
		case ActionSettle:
			p := newProblem(ProblemInProgress, key, "an interrupted attempt of this call may still land at the provider, and its lookup does not show it yet; retry after the attempt has settled")
			p.RetryAfter = max(time.Until(s.settleBy(&st)), time.Second)
			if d.Reason == ReasonLookupRate {
				p.Detail = "the outcome of an interrupted attempt is unknown and the provider's lookup budget (lookup.rate) is spent; retry shortly"
				p.RetryAfter = max(c.lookupWait, time.Second)
			}
			return s.problemWith(c, p, d)
		case ActionMismatch:
			p := newProblem(ProblemPayloadMismatch, key, "the body differs from the one an approval or review was given for; send that exact body, or a new intent")
			return s.problemWith(c, p, d)
		}
	}
}

// decide applies the recovery table to the key's current record inside one
// journal transaction, making the change it calls for.
func (s *Server) decide(c *call) (d Decision, st journal.Step, fl *flight, wait *flight, err error) {
	key := c.intent.Key
	now := s.now()
	c.versionChange = s.versionChange(c)
	st, err = s.journal.Apply(c.in.Context(), key, func(cur *journal.Step) (journal.Change, error) {
		sit := Situation{
			Step:        cur,
			Strategy:    strategyOf(c.route),
			Effect:      c.route.Effect,
			Approval:    c.route.ApprovalRequired,
			BodyHash:    c.intent.BodyHash,
			MaxAttempts: s.opts.MaxAttempts,
		}
		wait = nil
		if cur != nil {
			wait = s.flights.live(key, now)
			sit.InFlight = wait != nil
			if c.lookup != LookupNotAsked && c.lookupFence == cur.Fence {
				sit.Lookup = c.lookup
			}
			sit.Settling = now.Before(s.settleBy(cur))
			sit.NativeExpired = nativeExpired(c.route, cur, now)
			sit.HasLookup = c.route.Lookup != nil
			sit.Backoff = backoff(cur, now)
		}
		d = Decide(sit)
		if cur == nil {
			d = s.applyVersionPolicy(c, d)
		}
		ch, ok := s.changeFor(c, cur, d, now)
		if !ok {
			return journal.Change{}, journal.ErrNoChange
		}
		if d.Action == ActionForward {
			fl = s.flights.start(key, now.Add(s.opts.UpstreamTimeout+leaseGrace))
		}
		return ch, nil
	})
	if err != nil && fl != nil {
		s.flights.finish(key, fl)
		fl = nil
	}
	return d, st, fl, wait, err
}

// settleBy is when a started step's last attempt can no longer land at the
// provider: an upstream timeout after it was last written.
// A route's lookup.settle, when longer, extends it: the provider's search
// may lag behind its writes that long.
func (s *Server) settleBy(st *journal.Step) time.Time {
	return st.UpdatedAt.Add(max(s.opts.UpstreamTimeout, lookupSettle(s.routeOf(st.API, st.Route))))
}

// leaseGrace is added to the upstream timeout to form a flight's lease: the
// time to record an outcome after the upstream answered.
const leaseGrace = 5 * time.Second

// changeFor builds the journal change a decision calls for; ok is false
// when the decision changes nothing.
func (s *Server) changeFor(c *call, cur *journal.Step, d Decision, now time.Time) (journal.Change, bool) {
	var st journal.Step
	why := d.Why
	if c.lookupEvidence != "" {
		why += " (" + c.lookupEvidence + ")"
	}
	if cur != nil {
		st = *cur
	} else {
		st = s.newStep(c)
	}
	switch d.Action {
	case ActionForward:
		ev := "started"
		switch {
		case d.Recovered:
			ev = "resent"
		case cur != nil && cur.Status == journal.StatusFailed:
			ev = "retried"
		}
		st.Status = journal.StatusStarted
		st.Hold, st.HoldReason = journal.HoldNone, ""
		st.ApprovedBodyHash = ""
		st.Attempt++
		ch := journal.Change{Step: st, Event: ev, Reason: why, Claim: true}
		if cur == nil && c.versionChange != "" {
			ch.Extra = []journal.Event{{Type: "version_changed", Reason: c.versionChange + " (allowed by policy)"}}
		}
		return ch, true
	case ActionHold:
		if cur == nil {
			st.Status = journal.StatusPrepared
		}
		st.Hold, st.HoldReason = d.Hold, d.Reason
		if c.lookupEvidence != "" {
			st.LastError = c.lookupEvidence
		}
		return journal.Change{Step: st, Event: "held", Reason: why}, true
	case ActionRecordFound:
		lf := c.lookupFound
		st.Status = journal.StatusCommitted
		st.OperationID = lf.operationID
		st.Evidence = lf.evidence
		st.Response = recoveredResponse(c.route, lf)
		if v := c.route.Verify; v != nil && st.OperationID != "" {
			st.VerifyBy = now.Add(v.Within)
		}
		return journal.Change{Step: st, Event: "recovered", Reason: why}, true
	}
	return journal.Change{}, false
}

// newStep is the first record of a key.
func (s *Server) newStep(c *call) journal.Step {
	return journal.Step{
		Key:           c.intent.Key,
		API:           c.route.API.Name,
		Route:         c.route.Name,
		Workflow:      c.in.Header.Get(HeaderWorkflow),
		Method:        c.in.Method,
		Host:          c.in.URL.Host,
		Path:          c.in.URL.Path,
		BodyHash:      c.intent.BodyHash,
		CredentialMAC: c.callerMAC,
		PromptVersion: c.in.Header.Get(HeaderPromptVersion),
		PolicyVersion: c.in.Header.Get(HeaderPolicyVersion),
	}
}

func (s *Server) await(fl *flight, until time.Time) bool {
	if fl == nil {
		return true
	}
	t := time.NewTimer(time.Until(until))
	defer t.Stop()
	select {
	case <-fl.done:
		return true
	case <-t.C:
		return false
	}
}

func (s *Server) journalFailure(c *call, err error) *answer {
	s.log.Error("journal write failed; nothing was sent", slog.String("key", c.intent.Key), slog.Any("error", err))
	return s.problem(c, newProblem(ProblemUnavailable, c.intent.Key, "the journal could not record the call, so it was not sent; retry later"))
}
