package proxy

import (
	"context"
	"net/http"
	"time"

	"github.com/toolguard/toolguard/abandoned"
	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/lifecycle"
	"github.com/toolguard/toolguard/rules"
	"github.com/toolguard/toolguard/verifiers"
)

// StartResolver runs the resolver of abandoned steps (package abandoned)
// every interval (default AbandonAfter/4, between 1s and 1m) until Close.
func (s *Server) StartResolver(interval time.Duration) {
	if interval <= 0 {
		interval = min(max(s.opts.AbandonAfter/4, time.Second), time.Minute)
	}
	r := s.newResolver()
	s.bgWork.Add(1)
	go func() {
		defer s.bgWork.Done()
		r.Run(s.bg, interval)
	}()
}

// newResolver builds the resolver of abandoned steps: a step is left to
// its call while it is in flight here, its last attempt may still land
// (see settle), or its caller came back (see retries).
func (s *Server) newResolver() *abandoned.Resolver {
	return abandoned.New(abandoned.Config{
		Journal: s.journal,
		Route:   s.routeOf,
		Active: func(st *journal.Step, now, cutoff time.Time) bool {
			return s.flights.Live(st.Key, now) != nil || s.settling(st) || s.retries.Since(st.Key, cutoff)
		},
		PassEnded:       s.retries.Forget,
		Lookup:          s.backgroundLookup,
		Landing:         s.landing,
		Verify:          s.verifications.Start,
		Credentials:     &s.parked,
		Lease:           s.lease(),
		AbandonAfter:    s.opts.AbandonAfter,
		UpstreamTimeout: s.opts.UpstreamTimeout,
		Now:             s.now,
		Metrics:         s.metrics,
		Log:             s.log,
	})
}

// backgroundLookup asks the provider whether an abandoned call took
// effect. The request body is not journaled: the lookup sees the key, the
// operation id, a stored response and the step's recovery values (the
// request values its templates read).
func (s *Server) backgroundLookup(ctx context.Context, route *rules.Route, st *journal.Step, creds http.Header) (lifecycle.LookupAnswer, *lifecycle.Found, string) {
	vals := rules.Values{Key: st.Key, OperationID: st.OperationID, Stored: st.RecoveryValues}
	if st.Response != nil && !st.Response.Truncated {
		vals.Response = st.Response.Body
	}
	res := s.verifier.Lookup(ctx, route.Lookup, vals, creds)
	evidence := "lookup " + res.Evidence
	s.log.Info("lookup of an abandoned step", logKey, st.Key, logRoute, route.Name, "answer", res.Answer.String(), "evidence", res.Evidence)
	switch res.Answer {
	case verifiers.Yes:
		found := &lifecycle.Found{OperationID: res.OperationID, Evidence: evidence, Response: recoveredResponse(route, res.Recovered)}
		return lifecycle.LookupFound, found, evidence
	case verifiers.No:
		return lifecycle.LookupAbsent, nil, evidence
	}
	return lifecycle.LookupUnknown, nil, evidence
}
