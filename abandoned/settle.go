package abandoned

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/lifecycle"
	"github.com/toolguard/toolguard/rules"
	"github.com/toolguard/toolguard/verification"
)

// abandon settles one abandoned step: a route with a lookup asks the
// provider; any other route, and a lookup that reads a request value the
// call did not carry, holds it for review. It reports whether it wrote.
func (r *Resolver) abandon(ctx context.Context, st journal.Step, now time.Time) bool {
	route := r.cfg.Route(st.API, st.Route)
	lookup, found, evidence, ok := r.ask(ctx, route, &st, now)
	if !ok {
		return false
	}
	within := time.Duration(0)
	if route != nil && route.Verify != nil {
		within = route.Verify.Within
	}
	rev, updated, epoch := st.Revision, st.UpdatedAt, r.cfg.Journal.Epoch()
	got, err := r.cfg.Journal.Apply(ctx, st.Key, journal.Fenced(st.Epoch, st.Fence, func(cur *journal.Step) (journal.Change, error) {
		if cur.Revision != rev || !cur.UpdatedAt.Equal(updated) {
			return journal.Change{}, journal.ErrNoChange // it moved on since the pass read it
		}
		ch, ok := lifecycle.Abandon(*cur, lookup, found, evidence, within, now)
		if !ok {
			return journal.Change{}, journal.ErrNoChange
		}
		return lifecycle.WithTakeover(ch, cur, epoch, r.cfg.Lease, r.cfg.Landing(route)), nil
	}))
	if err != nil || got.Revision == rev {
		if err != nil && ctx.Err() == nil {
			r.cfg.Log.Info("abandoned step left as it is: it changed meanwhile", slog.String(logKey, st.Key), slog.Any("error", err))
		}
		return false
	}
	r.settled(route, st, got, evidence)
	return true
}

// ask is what a lookup says of st, or why none was made; ok is false while
// the lookup waits for its caller's credential.
func (r *Resolver) ask(ctx context.Context, route *rules.Route, st *journal.Step, now time.Time) (lifecycle.LookupAnswer, *lifecycle.Found, string, bool) {
	if route == nil || route.Lookup == nil {
		return lifecycle.LookupNotAsked, nil, "", true
	}
	if absent := lifecycle.MissingLookupRefs(route, st); len(absent) > 0 {
		return lifecycle.LookupNotAsked, nil, lifecycle.NoLookupEvidence(absent), true // held: the lookup cannot be made
	}
	creds, ready, gaveUp := r.credentials(route, st, now)
	switch {
	case !ready:
		return lifecycle.LookupNotAsked, nil, "", false
	case gaveUp:
		return lifecycle.LookupNotAsked, nil, "lookup not asked: no request with the caller's credential arrived within " + r.cfg.AbandonAfter.String(), true
	}
	lookup, found, evidence := r.cfg.Lookup(ctx, route, st, creds)
	return lookup, found, evidence, true
}

// settled counts and logs a step settled, and starts the verification of
// one a lookup found committed.
func (r *Resolver) settled(route *rules.Route, st, got journal.Step, evidence string) {
	result := map[journal.Status]string{journal.StatusCommitted: "abandoned_found", journal.StatusFailed: "abandoned_absent"}[got.Status]
	if got.Held() {
		result = "abandoned_held"
	}
	strategy := lifecycle.StrategyNone
	if route != nil {
		strategy = lifecycle.StrategyOf(route)
	}
	r.cfg.Metrics.Recovery(strategy, result)
	r.cfg.Log.Warn("abandoned step settled in the background; nothing was sent",
		slog.String(logKey, st.Key), slog.String(logRoute, st.Route), slog.String("status", got.Status.String()),
		slog.String("hold", got.Hold.String()), slog.String("evidence", evidence))
	if got.Status == journal.StatusCommitted && route != nil && route.Verify != nil && !got.VerifyBy.IsZero() {
		vals := rules.Values{Key: got.Key, OperationID: got.OperationID, Stored: got.RecoveryValues}
		r.cfg.Verify(verification.Job{Route: route, Step: got, Vals: vals})
	}
}

// credentials returns the caller's credential headers for a lookup. An
// API without a credential header needs none (ready). Otherwise the
// lookup waits, across passes, for the caller's next guarded request to
// lend it; ready is false while it waits, and gaveUp is set once it has
// waited AbandonAfter.
func (r *Resolver) credentials(route *rules.Route, st *journal.Step, now time.Time) (creds http.Header, ready, gaveUp bool) {
	if route.API.Credential == "" || st.CredentialMAC == "" {
		return nil, true, false
	}
	w, ok := r.waiting[st.Key]
	if !ok {
		w = parkedCred{mac: st.CredentialMAC, ch: r.cfg.Credentials.Wait(st.CredentialMAC), since: now}
		r.waiting[st.Key] = w
	}
	select {
	case creds = <-w.ch:
		delete(r.waiting, st.Key)
		return creds, true, false
	default:
	}
	if now.Sub(w.since) >= r.cfg.AbandonAfter {
		r.cfg.Credentials.Forget(w.mac, w.ch)
		delete(r.waiting, st.Key)
		return nil, true, true
	}
	return nil, false, false
}
