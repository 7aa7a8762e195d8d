package proxy

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/lifecycle"
	"github.com/toolguard/toolguard/rules"
	"github.com/toolguard/toolguard/verification"
	"github.com/toolguard/toolguard/verifiers"
)

// The resolver of abandoned steps. A step left started by a crash is
// resolved when its caller retries; when nobody retries, the resolver
// settles it in the background, never sending the call again (nobody waits
// for that effect):
//
//   - a route with a lookup asks the provider: found records the effect
//     (committed); absent marks the step failed and retryable, so that a
//     later retry sends it; unknown holds it for review;
//   - any other route, and a route whose lookup reads a request value
//     (a business reference) that the call did not carry, holds it for
//     review with the reason "abandoned".
//
// Observations (observe.go) are never resolved: one left started is only
// marked failed once it is as old as an abandoned step (endObservation).
//
// Candidates are steps started, not held, untouched for Options.AbandonAfter
// (never shorter than the lease plus the upstream timeout), whose last
// attempt cannot still land (see settle), not in flight in this process,
// with no running lease of another replica, and whose caller has not come
// back within AbandonAfter: a retry counts whatever it was answered
// (in-progress, 503), as this process saw it (see retries).
// Its write re-checks, inside the journal, that the step is still the one
// it read (same claim and revision), so a caller's retry or another
// replica's resolver that got there first wins and the resolver's write is
// dropped: on a shared journal the steps are settled once across replicas
// (their lookups, which only read, may run on more than one).

// abandonBatch bounds the candidates one pass looks at.
const abandonBatch = 1000

// StartResolver runs the resolver of abandoned steps every interval
// (default AbandonAfter/4, between 1s and 1m) until Close.
func (s *Server) StartResolver(interval time.Duration) {
	if interval <= 0 {
		interval = min(max(s.opts.AbandonAfter/4, time.Second), time.Minute)
	}
	s.bgWork.Add(1)
	go func() {
		defer s.bgWork.Done()
		r := &resolver{waiting: map[string]parkedCred{}}
		defer r.forgetAll(s)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			s.resolveAbandoned(r)
			select {
			case <-s.bg.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// resolver is the state of the resolver between passes: the lookups that
// wait for their caller's credential, by key.
type resolver struct {
	waiting map[string]parkedCred
}

// parkedCred is a lookup waiting for its caller's next request to lend
// the credential (the journal never holds one).
type parkedCred struct {
	mac   string
	ch    chan http.Header
	since time.Time
}

func (r *resolver) forgetAll(s *Server) {
	for key, w := range r.waiting {
		s.parked.Forget(w.mac, w.ch)
		delete(r.waiting, key)
	}
}

// resolveAbandoned runs one pass and returns how many steps it settled.
func (s *Server) resolveAbandoned(r *resolver) int {
	now := s.now()
	cutoff := now.Add(-max(s.opts.AbandonAfter, s.opts.UpstreamTimeout))
	steps, err := s.journal.List(journal.Filter{Status: journal.StatusStarted, HoldSet: true, Limit: abandonBatch})
	if err != nil {
		s.log.Error("list abandoned steps", slog.Any("error", err))
		return 0
	}
	epoch := s.journal.Epoch()
	seen := map[string]bool{}
	n := 0
	for i := range steps {
		st := &steps[i]
		if st.Observed {
			if st.UpdatedAt.Before(cutoff) && s.endObservation(*st) {
				n++
			}
			continue
		}
		if st.Held() || !st.UpdatedAt.Before(cutoff) || s.flights.live(st.Key, now) != nil || lifecycle.InFlightElsewhere(st, epoch) ||
			s.settling(st) || s.retries.since(st.Key, cutoff) {
			continue
		}
		seen[st.Key] = true
		if s.abandon(r, *st, now) {
			n++
		}
	}
	s.retries.forget(cutoff)
	for key, w := range r.waiting {
		if !seen[key] { // settled meanwhile, by a retry or an operator
			s.parked.Forget(w.mac, w.ch)
			delete(r.waiting, key)
		}
	}
	return n
}

// abandon settles one abandoned step; it reports whether it wrote.
func (s *Server) abandon(r *resolver, st journal.Step, now time.Time) bool {
	route := s.routeOf(st.API, st.Route)
	lookup, found, evidence := lifecycle.LookupNotAsked, (*lifecycle.Found)(nil), ""
	absent := stepLookupAbsent(route, &st)
	if len(absent) > 0 {
		evidence = noLookupEvidence(absent) // held: the lookup cannot be made
	}
	if route != nil && route.Lookup != nil && len(absent) == 0 {
		creds, ready, gaveUp := r.credentials(s, route, &st, now)
		if !ready {
			return false
		}
		if gaveUp {
			evidence = "lookup not asked: no request with the caller's credential arrived within " + s.opts.AbandonAfter.String()
		} else {
			lookup, found, evidence = s.backgroundLookup(route, &st, creds)
		}
	}
	within := time.Duration(0)
	if route != nil {
		within = verifyWithin(route)
	}
	rev, updated, epoch := st.Revision, st.UpdatedAt, s.journal.Epoch()
	got, err := s.journal.Apply(s.bg, st.Key, journal.Fenced(st.Epoch, st.Fence, func(cur *journal.Step) (journal.Change, error) {
		if cur.Revision != rev || !cur.UpdatedAt.Equal(updated) {
			return journal.Change{}, journal.ErrNoChange // it moved on since the pass read it
		}
		ch, ok := lifecycle.Abandon(*cur, lookup, found, evidence, within, now)
		if !ok {
			return journal.Change{}, journal.ErrNoChange
		}
		return lifecycle.WithTakeover(ch, cur, epoch, s.lease(), s.landing(route)), nil
	}))
	if err != nil || got.Revision == rev {
		if err != nil && s.bg.Err() == nil {
			s.log.Info("abandoned step left as it is: it changed meanwhile", slog.String(logKey, st.Key), slog.Any("error", err))
		}
		return false
	}
	result := map[journal.Status]string{journal.StatusCommitted: "abandoned_found", journal.StatusFailed: "abandoned_absent"}[got.Status]
	if got.Held() {
		result = "abandoned_held"
	}
	strategy := lifecycle.StrategyNone
	if route != nil {
		strategy = lifecycle.StrategyOf(route)
	}
	s.metrics.Recovery(strategy, result)
	s.log.Warn("abandoned step settled in the background; nothing was sent",
		slog.String(logKey, st.Key), slog.String(logRoute, st.Route), slog.String("status", got.Status.String()),
		slog.String("hold", got.Hold.String()), slog.String("evidence", evidence))
	if got.Status == journal.StatusCommitted && route != nil && route.Verify != nil && !got.VerifyBy.IsZero() {
		vals := rules.Values{Key: got.Key, OperationID: got.OperationID, Stored: got.RecoveryValues}
		s.verifications.Start(verification.Job{Route: route, Step: got, Vals: vals})
	}
	return true
}

// stepLookupAbsent lists the request values the route's lookup reads that
// the step's stored recovery values lack (the request did not carry them):
// nil when the lookup can be made, or there is none.
func stepLookupAbsent(route *rules.Route, st *journal.Step) []string {
	if route == nil || route.Lookup == nil {
		return nil
	}
	return route.Lookup.AbsentRefs(rules.Values{Key: st.Key, Stored: st.RecoveryValues})
}

// endObservation ends an observation left started (its outcome stayed
// unknown) that nobody came back for: it is never looked up, held or sent,
// only marked failed so that retention removes it. It reports whether it
// wrote.
func (s *Server) endObservation(st journal.Step) bool {
	rev := st.Revision
	got, err := s.journal.Apply(s.bg, st.Key, func(cur *journal.Step) (journal.Change, error) {
		if cur == nil || cur.Revision != rev {
			return journal.Change{}, journal.ErrNoChange // it moved on since the pass read it
		}
		if ch, ok := lifecycle.ObservationEnd(*cur); ok {
			return ch, nil
		}
		return journal.Change{}, journal.ErrNoChange
	})
	return err == nil && got.Revision != rev
}

// backgroundLookup asks the provider whether an abandoned call took
// effect. The request body is not journaled: the lookup sees the key, the
// operation id, a stored response and the step's recovery values (the
// request values its templates read).
func (s *Server) backgroundLookup(route *rules.Route, st *journal.Step, creds http.Header) (lifecycle.LookupAnswer, *lifecycle.Found, string) {
	vals := rules.Values{Key: st.Key, OperationID: st.OperationID, Stored: st.RecoveryValues}
	if st.Response != nil && !st.Response.Truncated {
		vals.Response = st.Response.Body
	}
	res := s.verifier.Lookup(s.bg, route.Lookup, vals, creds)
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

// credentials returns the caller's credential headers for a lookup. An
// API without a credential header needs none (ready). Otherwise the
// lookup waits, across passes, for the caller's next guarded request to
// lend it (see parking); ready is false while it waits, and gaveUp is set
// once it has waited AbandonAfter.
func (r *resolver) credentials(s *Server, route *rules.Route, st *journal.Step, now time.Time) (creds http.Header, ready, gaveUp bool) {
	if route.API.Credential == "" || st.CredentialMAC == "" {
		return nil, true, false
	}
	w, ok := r.waiting[st.Key]
	if !ok {
		w = parkedCred{mac: st.CredentialMAC, ch: s.parked.Wait(st.CredentialMAC), since: now}
		r.waiting[st.Key] = w
	}
	select {
	case creds = <-w.ch:
		delete(r.waiting, st.Key)
		return creds, true, false
	default:
	}
	if now.Sub(w.since) >= s.opts.AbandonAfter {
		s.parked.Forget(w.mac, w.ch)
		delete(r.waiting, st.Key)
		return nil, true, true
	}
	return nil, false, false
}
