package proxy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/elazarl/goproxy"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/lifecycle"
	"github.com/toolguard/toolguard/metrics"
	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/rules"
)

// Observe mode.
//
// A call of an API whose guard mode is observe (guard.mode, or its rule
// file's guard: {mode}) gets exactly what it would get without toolguard.
// It is forwarded as a passed-through call is: the agent's request as it
// was sent, the upstream's answer streamed back, nothing replayed, held or
// refused, no header added or injected (not even Toolguard-Outcome), the
// same Toolguard-* headers stripped as on a passed-through call. The
// egress checks (upstream.allow_hosts, egress.deny, toolguard's own
// listeners, unmatched: reject) still apply: they are not guards.
//
// It is journaled all the same, as an observation (journal.Step.Observed)
// that is never replayed: when the call arrives, its key is derived, the
// key's record read, and the recovery table (lifecycle.Decide, the one enforcement
// uses) says what enforcement would have done, with no claim. A call
// whose key cannot be derived would have been refused; its observation is
// keyed on the refused request (refusedKey). What enforcement would have
// done goes into the observation's event, the toolguard_observed_total
// metric and the call's decision line (mode=observe, would=...).
//
// The journal write comes after the answer has been streamed (the agent
// read it, or went away), in the background: a slow or failing journal
// never delays or changes an answer, it only loses observations. Until
// the write is done, the observations in flight and their records are
// kept in the process (observing), so that a duplicate is decided on
// what happened to the call before it.

// outcomeObserved is the outcome of an observed call in the decision line
// and in toolguard_requests_total; it is never sent in Toolguard-Outcome.
const outcomeObserved = metrics.OutcomeObserved

// modeOf is the guard mode of api's calls: its rule file's, else the
// global one.
func (s *Server) modeOf(api *rules.API) policy.Mode { return api.GuardMode(s.opts.Mode) }

// observation is one call of observe mode on its way: what enforcement
// would have done with it, decided when it arrived, and what the journal
// is told once its answer has been streamed.
type observation struct {
	s *Server
	c *call
	// key is the observation's journal key: the call's derived key, or
	// refusedKey for a call enforcement would have refused.
	key string
	// fresh is the observation's first record.
	fresh journal.Step
	// base is the key's record as the decision read it; nil when none.
	base  *journal.Step
	would journal.Would
	why   string
	// outcome classifies the attempt in the call's protocol, as the
	// carrier's outcome does for a guarded call.
	outcome func(res result, now time.Time) func(journal.Step) journal.Change
	once    sync.Once
}

// observe lets a REST call of observe mode pass, with its observation.
func (s *Server) observe(req *http.Request, ctx *goproxy.ProxyCtx, route *rules.Route, params map[string]string) (*http.Request, *http.Response) {
	c := &call{in: req, route: route, params: params, start: time.Now(), carrier: restCarrier{s}}
	got := s.peekBody(c)
	if got == peekPartial {
		// No room to read the body (limits.body_buffer), or it broke: what
		// enforcement would have done is not known. Forwarded unobserved.
		s.releaseBody(c)
		s.log.Debug("observed call not journaled: its body could not be read whole", slog.String(logAPI, route.API.Name), slog.String(logRoute, route.Name))
		return s.passThrough(req, ctx, "observe mode: body not read whole, unobserved", true)
	}
	o := s.newObservation(c, got == peekWhole, func() string { return s.deriveREST(c) })
	o.outcome = func(res result, now time.Time) func(journal.Step) journal.Change {
		return restCarrier{s}.outcome(c, res, now)
	}
	stripToolguardHeaders(req.Header)
	ctx.UserData = &reqState{observe: true, observed: o}
	ctx.RoundTripper = observingTripper{o}
	return req, nil
}

// passThrough lets a call no guard applies to pass, as handleRequest
// does; observe marks a call of an API in observe mode, whose answer gets
// no toolguard header.
func (s *Server) passThrough(req *http.Request, ctx *goproxy.ProxyCtx, why string, observe bool) (*http.Request, *http.Response) {
	if why != "" || observe {
		ctx.UserData = &reqState{why: why, observe: observe}
	}
	stripToolguardHeaders(req.Header)
	req = s.tracePassthrough(req, ctx)
	ctx.RoundTripper = passthroughTripper{s}
	return req, nil
}

// deriveREST derives a REST call's intent into c, as prepare does; it
// returns why enforcement would have refused the call, or "".
func (s *Server) deriveREST(c *call) string { return s.deriveInto(c, inputOf(c), "") }

// deriveInto derives c's intent from in, refusing what prepare and
// prepareMCP refuse; it returns why enforcement would have refused the
// call (what, when set, names the part of it keyed), or "".
func (s *Server) deriveInto(c *call, in rules.Input, what string) string {
	if in.Credential == "" {
		if why := c.route.MissingCredential(); why != "" {
			return why
		}
	}
	intent, err := s.deriver.Derive(c.route, in)
	if err != nil {
		return what + err.Error()
	}
	c.intent, c.input = intent, in
	return ""
}

// newObservation derives c's key (derive returns why enforcement would
// have refused it), decides what enforcement would have done, and counts
// the call in flight. whole is false when c's body was not read whole
// (larger than limits.max_body).
func (s *Server) newObservation(c *call, whole bool, derive func() string) *observation {
	o := &observation{s: s, c: c}
	c.callerMAC = s.credentialMAC(c.route.API, c.in.Header)
	var why string
	if whole {
		why = derive()
	}
	switch {
	case !whole:
		o.refused(journal.WouldRefuseBodyTooLarge, fmt.Sprintf("request body exceeds limits.max_body (%d bytes)", s.opts.MaxBody))
	case why != "":
		o.refused(journal.WouldRefuseInvalidBody, why)
	default:
		o.key = c.intent.Key
		o.fresh = s.newStep(c)
		o.decide()
	}
	o.fresh.Observed = true
	o.fresh.Workflow = "" // in the key's scope, but an observation joins no workflow
	s.observing.Start(o.key)
	return o
}

// refused sets up the observation of a call enforcement would have
// refused before deriving its key: keyed on the refused request, with an
// intent that carries only that key.
func (o *observation) refused(w journal.Would, why string) {
	c := o.c
	sum := sha256.Sum256(c.body)
	o.key = refusedKey(c)
	c.intent = &rules.Intent{Key: o.key, BodyHash: hex.EncodeToString(sum[:])}
	o.fresh = journal.Step{
		Key: o.key, API: c.route.API.Name, Route: c.route.Name,
		Method: c.in.Method, Scheme: c.in.URL.Scheme, Host: c.in.URL.Host, Path: c.in.URL.Path,
		BodyHash: c.intent.BodyHash, KeyForm: rules.KeyForm, CredentialMAC: c.callerMAC,
	}
	o.would, o.why = w, why
}

// refusedKey keys the observation of a request enforcement would have
// refused: a hash of its route, caller, target and the body bytes read,
// apart from every derived key (which hashes canonical JSON).
func refusedKey(c *call) string {
	h := sha256.New()
	for _, v := range []string{"toolguard refused request", c.route.API.Name, c.route.Name, c.callerMAC,
		c.in.Method, c.in.URL.Host, c.in.URL.EscapedPath()} {
		h.Write([]byte(v))
		h.Write([]byte{0})
	}
	h.Write(c.body)
	return hex.EncodeToString(h.Sum(nil))
}

// decide says what enforcement would have done with the call: the
// recovery table on the key's record as the journal and this process's
// observations show it, read without a claim. No lookup is made (it would
// be a request of toolguard's own): where enforcement would ask the
// provider, would is lookup.
func (o *observation) decide() {
	s, c := o.s, o.c
	key := c.intent.Key
	now := s.now()
	var cur *journal.Step
	st, err := s.journal.Get(key)
	switch {
	case err == nil:
		cur = &st
	case !errors.Is(err, journal.ErrNotFound):
		o.why = " (the journal could not be read: " + err.Error() + ")"
	}
	inFlight, unsaved := s.observing.View(key)
	if unsaved != nil && (cur == nil || cur.Observed) {
		cur = unsaved // written next: more recent than the journal's
	}
	sit, _ := s.situation(c, cur, now, s.journal.Epoch(), nil)
	if inFlight && (cur == nil || (cur.Observed && !cur.Held())) {
		// The same call is in flight here: enforcement would have found
		// it started, and in flight.
		started := o.fresh
		if cur != nil {
			started = *cur
		}
		started.Status = journal.StatusStarted
		sit.Step, sit.InFlight = &started, true
	}
	d := lifecycle.Decide(sit)
	if sit.Step == nil {
		c.versionChange = s.versionChange(c)
		d = s.applyVersionPolicy(c, d)
	}
	o.base, o.would, o.why = cur, lifecycle.Would(d), d.Why+o.why
}

// ended journals the observation once the call has ended: res is the
// attempt (its body the answer's first bytes), sum the hex sha256 of the
// whole answer as streamed ("" when it was not read to its end). It
// writes the decision line and the metrics now, and the journal in the
// background. Only the first call counts.
func (o *observation) ended(res result, sum string) {
	o.once.Do(func() {
		s, c := o.s, o.c
		s.releaseBody(c)
		outcome := o.outcome(res, time.Now())
		withHash := func(cur journal.Step) journal.Change {
			ch := outcome(cur)
			if r := ch.Step.Response; r != nil && sum != "" {
				r.BodyHash = sum
			}
			return ch
		}
		reason := journal.ObservedReason(o.would, o.why)
		write := func(cur *journal.Step) (journal.Change, error) {
			return lifecycle.Observed(cur, o.fresh, withHash, reason), nil
		}
		preview, _ := write(o.base)
		s.observing.Ended(o.key, &preview.Step)
		o.log(res)
		s.writes.Add(1)
		go func() {
			defer s.writes.Done()
			defer s.observing.Saved(o.key)
			if _, err := s.journal.Apply(context.Background(), o.key, write); err != nil {
				s.log.Warn("observation not journaled", slog.String(logKey, o.key), slog.Any("error", err))
			}
		}()
	})
}

// dropped ends an observation that journals nothing: the call was not
// sent (the egress checks refused it), and has its own decision line.
func (o *observation) dropped() {
	o.once.Do(func() {
		o.s.releaseBody(o.c)
		o.s.observing.Ended(o.key, nil)
	})
}

// log writes the observed call's one decision line and counts it.
func (o *observation) log(res result) {
	s, c := o.s, o.c
	route := c.carrier.routeLabel(c)
	s.metrics.Request(c.route.API.Name, route, outcomeObserved)
	s.metrics.Observed(c.route.API.Name, route, o.would)
	status := 0
	if res.resp != nil {
		status = res.resp.StatusCode
	}
	why := o.why
	if res.err != nil {
		why += "; upstream: " + res.err.Error()
	}
	s.log.LogAttrs(c.in.Context(), slog.LevelInfo, "observed call",
		slog.String(logKey, o.key),
		slog.String(logAPI, c.route.API.Name),
		slog.String(logRoute, c.route.Name),
		slog.String(logMode, policy.ModeObserve.String()),
		slog.String(logWould, o.would.String()),
		slog.String(logOutcome, outcomeObserved),
		slog.Int(logStatus, status),
		slog.Duration(logDuration, time.Since(c.start)),
		slog.String(logWhy, why),
	)
}
