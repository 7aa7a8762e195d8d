package proxy

import (
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/elazarl/goproxy"

	"github.com/toolguard/toolguard/internal/headerfilter"
	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/lifecycle"
	"github.com/toolguard/toolguard/metrics"
	"github.com/toolguard/toolguard/observe"
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
// that is never replayed; package observe records it (what enforcement
// would have done, by the recovery table the guard uses, with no claim),
// and writes it to the journal in the background once the answer has been
// streamed. What stays here is where the pipeline decides to observe: the
// call's key derived as prepare derives it, and observation, the call as
// package observe sees it. A call whose key cannot be derived would have
// been refused; its observation is keyed on the refused request
// (refusedStep).

// outcomeObserved is the outcome of an observed call in the decision line
// and in toolguard_requests_total; it is never sent in Toolguard-Outcome.
const outcomeObserved = metrics.OutcomeObserved

// modeOf is the guard mode of api's calls: its rule file's, else the
// global one.
func (s *Server) modeOf(api *rules.API) policy.Mode { return api.GuardMode(s.opts.Mode) }

// observe lets a REST call of observe mode pass, with its observation.
func (s *Server) observe(req *http.Request, ctx *goproxy.ProxyCtx, route *rules.Route, params map[string]string) (*http.Request, *http.Response) {
	c := &call{in: req, route: route, params: params, start: time.Now(), carrier: restCarrier{s}}
	got := s.peekBody(c)
	if got == observe.PeekPartial {
		// No room to read the body (limits.body_buffer), or it broke: what
		// enforcement would have done is not known. Forwarded unobserved.
		s.releaseBody(c)
		s.log.Debug("observed call not journaled: its body could not be read whole", slog.String(logAPI, route.API.Name), slog.String(logRoute, route.Name))
		return s.passThrough(req, ctx, "observe mode: body not read whole, unobserved", true)
	}
	o := s.newObservation(c, got == observe.PeekWhole, func() string { return s.deriveREST(c) }, func(res result, now time.Time) func(journal.Step) journal.Change {
		return restCarrier{s}.outcome(c, res, now)
	})
	headerfilter.StripToolguard(req.Header)
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
	headerfilter.StripToolguard(req.Header)
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
// have refused it), starts the observation of what enforcement would have
// done, and counts the call in flight. whole is false when c's body was
// not read whole (larger than limits.max_body); outcome records the
// call's attempt, as its carrier's outcome does for a guarded call.
func (s *Server) newObservation(c *call, whole bool, derive func() string, outcome outcomeFunc) *observation {
	o := &observation{s: s, c: c, outcome: outcome}
	line := observe.Line{API: c.route.API.Name, Route: c.route.Name, Label: c.carrier.routeLabel(c), Start: c.start}
	ctx := c.in.Context()
	c.callerMAC = s.credentialMAC(c.route.API, c.in.Header)
	var why string
	if whole {
		why = derive()
	}
	switch {
	case !whole:
		why := fmt.Sprintf("request body exceeds limits.max_body (%d bytes)", s.opts.MaxBody)
		o.Observation = s.observing.StartRefused(ctx, o, line, refusedStep(c), journal.WouldRefuseBodyTooLarge, why)
	case why != "":
		o.Observation = s.observing.StartRefused(ctx, o, line, refusedStep(c), journal.WouldRefuseInvalidBody, why)
	default:
		o.Observation = s.observing.Start(ctx, o, line, s.newStep(c))
	}
	return o
}

// refusedStep is the first record of a call enforcement would have
// refused before deriving its key (observe.RefusedStep), and sets c's
// intent to one that carries only that key.
func refusedStep(c *call) journal.Step {
	st := observe.RefusedStep(journal.Step{
		API: c.route.API.Name, Route: c.route.Name,
		Method: c.in.Method, Scheme: c.in.URL.Scheme, Host: c.in.URL.Host, Path: c.in.URL.Path,
		KeyForm: rules.KeyForm, CredentialMAC: c.callerMAC,
	}, c.in.URL.EscapedPath(), c.body)
	c.intent = &rules.Intent{Key: st.Key, BodyHash: st.BodyHash}
	return st
}

// outcomeFunc returns the journal change that records an attempt's
// result, as carrier.outcome does.
type outcomeFunc func(res result, now time.Time) func(journal.Step) journal.Change

// observation is an observed call on its way: the call as package
// observe sees it (observe.Call), with its observation, sent upstream as
// a passed-through call is (send).
type observation struct {
	*observe.Observation
	s       *Server
	c       *call
	outcome outcomeFunc
}

var _ observe.Call = (*observation)(nil)

// Situation reads cur as the guard would for c, with no flight of its own.
func (o *observation) Situation(cur *journal.Step) lifecycle.Situation {
	sit, _ := o.s.situation(o.c, cur, o.s.now(), o.s.journal.Epoch(), nil)
	return sit
}

// NewIntent applies the version policy as the guard does to a new key.
func (o *observation) NewIntent(d lifecycle.Decision) lifecycle.Decision {
	o.c.versionChange = o.s.versionChange(o.c)
	return o.s.applyVersionPolicy(o.c, d)
}

// Outcome records the attempt as the call's carrier would.
func (o *observation) Outcome(a observe.Attempt, now time.Time) func(journal.Step) journal.Change {
	return o.outcome(result{resp: a.Resp, body: a.Head, err: a.Err, sent: a.Sent}, now)
}

// Release gives back the room of c's body.
func (o *observation) Release() { o.s.releaseBody(o.c) }
