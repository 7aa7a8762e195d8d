package proxy

import (
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/toolguard/toolguard/internal/flight"
	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/lifecycle"
	"github.com/toolguard/toolguard/problem"
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
	// input is what the intent was derived from (see shownRequest).
	input rules.Input
	start time.Time

	// lookup is the latest lookup made for the step at lookupFence.
	lookup      lifecycle.LookupAnswer
	lookupFence uint64
	lookupFound *lifecycle.Found
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
	// carrier takes the call to its provider in its protocol: REST until
	// an MCP tools/call is recognised (see handleMCP).
	carrier carrier
	// lease is the claim's lease while the call is forwarded.
	lease *lifecycle.Lease
	// legacyChecked: the intent was looked up under its previous key.
	legacyChecked bool
	// approval is what the route's approval said of the new intent, once
	// asked (see needsApproval).
	approval approvalVerdict
	// overBudget: the journal refused to count the new intent against its
	// route's budget, so it is held instead of sent.
	overBudget bool
}

// answer is what the pipeline sends back, with what to log about it.
type answer struct {
	resp     *http.Response
	outcome  string
	decision lifecycle.Decision
	attempt  int
}

// guard runs a request that a route describes through the pipeline.
func (s *Server) guard(req *http.Request, route *rules.Route, params map[string]string) *http.Response {
	req = s.trace.Route(req, route)
	c := &call{in: req, route: route, params: params, start: time.Now(), carrier: restCarrier{s}}
	defer s.releaseBody(c)
	return s.admit(c, s.prepare)
}

// admit runs a guarded call (REST or MCP) through prepare, which derives
// its key or answers bad input, and then the pipeline, within
// limits.max_in_flight and not while draining; it writes the call's one
// decision line.
func (s *Server) admit(c *call, prepare func(*call) *answer) *http.Response {
	if !s.active.TryAdd(s.opts.MaxInFlight) {
		s.metrics.Reject("in_flight_limit")
		p := problem.New(problem.Unavailable, "", "too many calls in flight (limits.max_in_flight); retry shortly")
		p.RetryAfter = time.Second
		a := s.problem(c, p)
		s.logDecision(c, a)
		return a.resp
	}
	defer s.active.Done()
	var a *answer
	if s.draining.Load() {
		s.metrics.Reject("draining")
		a = s.problem(c, problem.New(problem.Unavailable, "", "toolguard is shutting down; retry shortly"))
	} else if a = prepare(c); a == nil {
		a = s.run(c)
	}
	s.logDecision(c, a)
	return a.resp
}

// prepare reads the body and derives the key; it answers only on bad input.
func (s *Server) prepare(c *call) *answer {
	if a := s.readBody(c); a != nil {
		return a
	}
	in := inputOf(c)
	if in.Credential == "" {
		if a := s.refuseNoCredential(c); a != nil {
			return a
		}
	}
	intent, err := s.deriver.Derive(c.route, in)
	if err != nil {
		s.metrics.Reject("invalid_body")
		return s.problem(c, problem.New(problem.InvalidBody, "", err.Error()))
	}
	c.intent, c.input = intent, in
	c.callerMAC = s.credentialMAC(c.route.API, c.in.Header)
	s.parked.Lend(c.callerMAC, c.route.API, c.in.Header)
	return nil
}

// inputOf is what a REST call's intent is derived from: its body, target
// and scope values.
func inputOf(c *call) rules.Input {
	return rules.Input{
		ContentType: c.in.Header.Get("Content-Type"),
		Body:        c.body,
		RawQuery:    c.in.URL.RawQuery,
		PathValues:  c.params,
		EscapedPath: c.in.URL.EscapedPath(),
		Workflow:    c.in.Header.Get(HeaderWorkflow),
		Host:        c.in.URL.Host,
		Credential:  c.route.API.CallerCredential(c.in.Header),
	}
}

// refuseNoCredential answers a guarded call that carries no credential
// with 400 invalid-body, before anything is journaled or sent: without
// one, every caller would share one key and workflow scope. It returns nil
// when the rule file says credential: none.
func (s *Server) refuseNoCredential(c *call) *answer {
	why := c.route.MissingCredential()
	if why == "" {
		return nil
	}
	s.metrics.Reject("no_credential")
	return s.problem(c, problem.New(problem.InvalidBody, "", why))
}

// run decides and acts until the request has an answer: a decision may
// need a lookup or a wait first, after which the step is decided afresh.
func (s *Server) run(c *call) *answer {
	key := c.intent.Key
	waitUntil := c.start.Add(s.opts.InFlightWait)
	unknown := 0
	for {
		st, err := s.journal.Get(key)
		if err == nil && st.Terminal() && !st.Held() && !st.Observed {
			return s.replay(c, &st, OutcomeReplayed, lifecycle.Decision{Action: lifecycle.ActionReplay, Why: "outcome stored"})
		}
		if err == nil || !errors.Is(err, journal.ErrNotFound) {
			// A caller back for a step without an outcome (or one the
			// journal cannot tell): the resolver leaves it to them.
			s.retries.Touch(key, s.now())
		} else if old, ok := s.legacyStep(c); ok {
			key = old // journaled by the previous version: continue it
			continue
		} else {
			s.needsApproval(c) // a new intent: evaluated here, outside the journal's write
		}
		dd, err := s.decide(c)
		if errors.Is(err, journal.ErrCommitUnknown) && unknown < maxCommitUnknown {
			// The claim may or may not be stored: read the step again
			// and decide afresh; nothing was sent on its strength.
			unknown++
			continue
		}
		switch {
		case errors.Is(err, journal.ErrOverBudget) && !c.overBudget:
			c.overBudget = true // nothing was written: decide again, to hold it
			continue
		case errors.Is(err, journal.ErrTooManyHolds):
			return s.tooManyHolds(c)
		case err != nil:
			return s.journalFailure(c, err)
		}
		d, st := dd.decision, dd.step
		s.trace.Step(c.in.Context(), &st)
		switch d.Action {
		case lifecycle.ActionReplay:
			return s.replay(c, &st, OutcomeReplayed, d)
		case lifecycle.ActionForward:
			a, err := s.forward(c, st, dd.mine, d)
			if errors.Is(err, journal.ErrFenced) {
				continue // someone took the step over: answer from its record
			}
			if err != nil {
				return s.journalFailure(c, err)
			}
			return a
		case lifecycle.ActionWait:
			if !s.await(key, dd.awaited, waitUntil) {
				p := problem.New(problem.InProgress, key, "a call with this key is still in flight; retry later")
				p.RetryAfter = time.Second
				return s.problem(c, p)
			}
		case lifecycle.ActionLookup:
			s.lookupFor(c, &st)
		case lifecycle.ActionRecordFound:
			s.afterCommit(c, st)
			return s.recoveredAnswer(c, &st, d)
		case lifecycle.ActionHold, lifecycle.ActionBlock:
			return s.blocked(c, &st, d)
		case lifecycle.ActionSettle:
			p := problem.New(problem.InProgress, key, "an interrupted attempt of this call may still land at the provider, and its lookup does not show it yet; retry after the attempt has settled")
			p.RetryAfter = max(s.settlesIn(&st), time.Second)
			if d.Reason == lifecycle.ReasonLookupRate {
				p.Detail = "the outcome of an interrupted attempt is unknown and the provider's lookup budget (lookup.rate) is spent; retry shortly"
				p.RetryAfter = max(c.lookupWait, time.Second)
			}
			return s.problemWith(c, p, d)
		case lifecycle.ActionMismatch:
			p := problem.New(problem.PayloadMismatch, key, "the body differs from the one an approval or review was given for; send that exact body, or a new intent")
			return s.problemWith(c, p, d)
		}
	}
}

// legacyStep looks a new intent up under the key the previous version
// derived for it, while the journal may hold steps of that version (see
// rules.Deriver.LegacyKey): found, the call continues under that key, so
// an upgrade never turns a retry into a second effect.
func (s *Server) legacyStep(c *call) (string, bool) {
	if !s.legacyKeys || !c.carrier.legacyKeys() || c.legacyChecked {
		return "", false
	}
	c.legacyChecked = true
	old, err := s.deriver.LegacyKey(c.route, c.input)
	if err != nil || old == c.intent.Key {
		return "", false
	}
	if st, err := s.journal.Get(old); err != nil || st.Observed {
		return "", false
	}
	c.intent.Key = old
	return old, true
}

// maxCommitUnknown bounds the re-reads after commits whose outcome was
// lost, before the call is answered 503.
const maxCommitUnknown = 3

// verdict is what decide found and did.
type verdict struct {
	decision lifecycle.Decision
	// step is the key's record after the decision's change.
	step journal.Step
	// mine is this call's flight when it claimed the step to forward it.
	mine *flight.Flight
	// awaited is the flight in this process to wait for; nil with
	// ActionWait means the step is in flight on another replica.
	awaited *flight.Flight
}

// decide applies the recovery table to the key's current record inside one
// journal transaction, making the change it calls for. The mutation may run
// more than once (journal.Mutation): the flight it registers for a forward
// is this call's own on every run, and is released after Apply unless the
// change that was written is this call's claim. It reads this process's
// flights inside the mutation on purpose: a duplicate whose mutation runs
// after the claim's, in the same commit, must find the claim's flight.
func (s *Server) decide(c *call) (verdict, error) {
	key := c.intent.Key
	now := s.now()
	epoch := s.journal.Epoch()
	c.versionChange = s.versionChange(c)
	var out verdict
	var mine *flight.Flight
	// The claim's lease counts from before its statement goes out.
	lease := lifecycle.NewLease(time.Now(), s.lease())
	st, err := s.journal.Apply(c.in.Context(), key, func(cur *journal.Step) (journal.Change, error) {
		out = verdict{}
		if cur != nil && cur.Observed {
			cur = nil // an observation is never replayed: the key is new to the guard
		}
		var sit lifecycle.Situation
		sit, out.awaited = s.situation(c, cur, now, epoch, mine)
		out.decision = lifecycle.Decide(sit)
		if cur == nil {
			out.decision = s.applyVersionPolicy(c, explain(c, out.decision))
		}
		ch, ok := s.changeFor(c, cur, out.decision, now)
		if !ok {
			return journal.Change{}, journal.ErrNoChange
		}
		if out.decision.Action == lifecycle.ActionForward {
			fl, other := s.flights.Reserve(key, mine, now, lease, s.opts.UpstreamTimeout+leaseGrace)
			if other != nil {
				// Another call of this process is claiming the key right
				// now (its write may not be visible yet): wait for it.
				out.decision = lifecycle.Decision{Action: lifecycle.ActionWait, Why: "a call with this key is being sent by this process"}
				out.awaited = other
				return journal.Change{}, journal.ErrNoChange
			}
			mine = fl
			out.mine = mine
		}
		return ch, nil
	})
	out.step = st
	if out.decision.Action == lifecycle.ActionWait && out.awaited != nil && errors.Is(err, journal.ErrNotFound) {
		err = nil // waiting for this process's own claim of a key not yet written
	}
	if mine != nil && (err != nil || out.mine == nil || st.Epoch != epoch || st.Status != journal.StatusStarted) {
		s.flights.Finish(key, mine)
		out.mine = nil
	}
	return out, err
}

// situation describes the key's record cur (nil: none) to the recovery
// table, for c arriving at now; awaited is the call of this process in
// flight with the key, if any, mine (c's own flight) excepted.
func (s *Server) situation(c *call, cur *journal.Step, now time.Time, epoch uint64, mine *flight.Flight) (sit lifecycle.Situation, awaited *flight.Flight) {
	absent := c.lookupAbsent()
	strategy, hasLookup := lifecycle.RecoveryOf(c.route, absent)
	sit = lifecycle.Situation{
		Step:        cur,
		Strategy:    strategy,
		Effect:      c.route.Effect,
		BodyHash:    c.intent.BodyHash,
		MaxAttempts: s.opts.MaxAttempts,
		OverBudget:  c.overBudget,
	}
	if cur == nil {
		sit.Approval = s.needsApproval(c)
		return sit, nil
	}
	awaited = s.flights.LiveOther(c.intent.Key, now, mine)
	sit.InFlight = awaited != nil || lifecycle.InFlightElsewhere(cur, epoch)
	if c.lookup != lifecycle.LookupNotAsked && c.lookupFence == cur.Fence {
		sit.Lookup = c.lookup
	}
	sit.Settling = s.settling(cur)
	sit.NativeExpired = lifecycle.NativeExpired(c.route, cur, now)
	sit.HasLookup = hasLookup
	sit.Backoff = lifecycle.Backoff(cur, now)
	if len(absent) > 0 && cur.Status == journal.StatusStarted {
		c.lookupEvidence = lifecycle.NoLookupEvidence(absent)
	}
	return sit, awaited
}

// lease is how long a claim lasts in a journal that shares leases.
func (s *Server) lease() time.Duration { return s.opts.Lease }

// leaseGrace is added to the upstream timeout to form a flight's lease: the
// time to record an outcome after the upstream answered.
const leaseGrace = 5 * time.Second

// changeFor builds the journal change a decision calls for; ok is false
// when the decision changes nothing. It is pure: see package lifecycle.
func (s *Server) changeFor(c *call, cur *journal.Step, d lifecycle.Decision, now time.Time) (journal.Change, bool) {
	why := d.Why
	if c.lookupEvidence != "" {
		why += " (" + c.lookupEvidence + ")"
	}
	var fresh journal.Step
	if cur == nil {
		fresh = s.newStep(c)
	}
	var ch journal.Change
	switch d.Action {
	case lifecycle.ActionForward:
		ch = lifecycle.Claim(cur, fresh, d, why, c.versionChange, s.lease())
	case lifecycle.ActionHold:
		ch = s.shownRequest(c, lifecycle.Hold(cur, fresh, d, why, c.lookupEvidence))
	case lifecycle.ActionRecordFound:
		ch = lifecycle.RecordFound(*cur, *c.lookupFound, why, verifyWithin(c.route), now)
	default:
		return journal.Change{}, false
	}
	ch = s.limited(c, cur, d, ch)
	return lifecycle.WithTakeover(ch, cur, s.journal.Epoch(), s.lease(), s.landing(c.route)), true
}

// verifyWithin is the route's verification window; zero when it has none.
func verifyWithin(r *rules.Route) time.Duration {
	if r.Verify == nil {
		return 0
	}
	return r.Verify.Within
}

// newStep is the first record of a key.
func (s *Server) newStep(c *call) journal.Step {
	return journal.Step{
		Key:            c.intent.Key,
		API:            c.route.API.Name,
		Route:          c.route.Name,
		Workflow:       c.in.Header.Get(HeaderWorkflow),
		Method:         c.in.Method,
		Scheme:         c.in.URL.Scheme,
		Host:           c.in.URL.Host,
		Path:           c.in.URL.Path,
		BodyHash:       c.intent.BodyHash,
		KeyFields:      s.keyFields(c.intent),
		RecoveryValues: recoveryValues(c),
		KeyForm:        rules.KeyForm,
		CredentialMAC:  c.callerMAC,
		PromptVersion:  c.in.Header.Get(HeaderPromptVersion),
		PolicyVersion:  c.in.Header.Get(HeaderPolicyVersion),
	}
}

// recoveryValues are the request values c's route needs to recover the
// step without the request (see rules.RecoveryValues).
func recoveryValues(c *call) map[string]string {
	refs := recoveryRefs(c.route)
	if len(refs) == 0 {
		return nil
	}
	return rules.RecoveryValues(refs, c.intent.Doc, c.intent.Redacted, c.params)
}

// recoveryRefsOf caches Route.RecoveryRefs by route: rules are immutable
// once loaded.
var recoveryRefsOf sync.Map // *rules.Route → []string

func recoveryRefs(r *rules.Route) []string {
	if r.Lookup == nil && r.Verify == nil {
		return nil
	}
	if v, ok := recoveryRefsOf.Load(r); ok {
		return v.([]string)
	}
	refs := r.RecoveryRefs()
	recoveryRefsOf.Store(r, refs)
	return refs
}

// keyFields is the summary of the intent's key fields kept in its step,
// for operators to see what they approve; nil when summaries are off.
func (s *Server) keyFields(it *rules.Intent) []journal.KeyField {
	if s.opts.NoKeySummary || len(it.Summary) == 0 {
		return nil
	}
	out := make([]journal.KeyField, len(it.Summary))
	for i, f := range it.Summary {
		out[i] = journal.KeyField(f)
	}
	return out
}

// await waits for the call in flight with the step's key: for fl, this
// process's flight, to finish; or, when fl is nil (the call runs on
// another replica), for the step to change (a hint from Watch, or a poll).
// It reports false when until passed first.
func (s *Server) await(key string, fl *flight.Flight, until time.Time) bool {
	t := time.NewTimer(time.Until(until))
	defer t.Stop()
	if fl != nil {
		select {
		case <-fl.Done():
			return true
		case <-t.C:
			return false
		}
	}
	if !time.Now().Before(until) {
		return false
	}
	changed, stop := s.journal.Watch(key)
	defer stop()
	poll := time.NewTimer(min(remotePoll, time.Until(until)))
	defer poll.Stop()
	select {
	case <-changed:
	case <-poll.C:
	case <-t.C:
	}
	return true
}

// remotePoll is how often a duplicate of a call in flight on another
// replica reads the step again when no wake-up arrives.
const remotePoll = 200 * time.Millisecond

func (s *Server) journalFailure(c *call, err error) *answer {
	s.log.Error("journal write failed; nothing was sent", slog.String("key", c.intent.Key), slog.Any("error", err))
	p := problem.New(problem.Unavailable, c.intent.Key, "the journal could not record the call, so it was not sent; retry later")
	p.RetryAfter = time.Second
	if errors.Is(err, journal.ErrUnavailable) {
		p.RetryAfter = 5 * time.Second
	}
	return s.problem(c, p)
}
