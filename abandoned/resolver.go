package abandoned

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/lifecycle"
	"github.com/toolguard/toolguard/metrics"
	"github.com/toolguard/toolguard/rules"
	"github.com/toolguard/toolguard/verification"
)

// Batch bounds the candidates one pass looks at.
const Batch = 1000

// Log attributes, as the proxy's decision lines name them.
const (
	logKey   = "key"
	logRoute = "route"
)

// Journal is what a Resolver needs of the journal.
type Journal interface {
	Epoch() uint64
	Apply(ctx context.Context, key string, mut journal.Mutation) (journal.Step, error)
	List(f journal.Filter) ([]journal.Step, error)
}

// Config is what a Resolver works with; every func is required.
type Config struct {
	Journal Journal
	// Route finds a loaded route by API and route name (nil: none).
	Route func(api, name string) *rules.Route
	// Active reports whether st is still in a call's hands: in flight in
	// this process, a last attempt that may still land, or a caller that
	// came back after cutoff.
	Active func(st *journal.Step, now, cutoff time.Time) bool
	// PassEnded is told a pass's cutoff once the pass ended: what the
	// proxy remembers of older retries can go.
	PassEnded func(cutoff time.Time)
	// Lookup asks the provider whether st's call took effect, with the
	// caller's credential headers.
	Lookup func(ctx context.Context, route *rules.Route, st *journal.Step, creds http.Header) (lifecycle.LookupAnswer, *lifecycle.Found, string)
	// Landing is the longest an attempt of route may take to land.
	Landing func(route *rules.Route) time.Duration
	// Verify starts the verification of a step a lookup found committed.
	Verify func(verification.Job) bool
	// Credentials lends lookups their caller's credential (nil: none is
	// ever lent, and a lookup that needs one gives up after AbandonAfter).
	Credentials *verification.Credentials
	// Lease is a claim's lease; AbandonAfter and UpstreamTimeout bound a
	// candidate's age.
	Lease, AbandonAfter, UpstreamTimeout time.Duration
	// Now is the clock of leases.
	Now func() time.Time
	// Metrics counts recoveries; nil counts none.
	Metrics *metrics.Metrics
	Log     *slog.Logger
}

// Resolver settles abandoned steps, pass after pass. It keeps, between
// passes, the lookups that wait for their caller's credential; it is not
// safe for concurrent use.
type Resolver struct {
	cfg     Config
	waiting map[string]parkedCred
}

// parkedCred is a lookup waiting for its caller's next request to lend
// the credential (the journal never holds one).
type parkedCred struct {
	mac   string
	ch    chan http.Header
	since time.Time
}

// New returns a Resolver.
func New(cfg Config) *Resolver {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Credentials == nil {
		cfg.Credentials = &verification.Credentials{}
	}
	return &Resolver{cfg: cfg, waiting: map[string]parkedCred{}}
}

// Run runs a pass every interval, the first at once, until ctx ends.
func (r *Resolver) Run(ctx context.Context, interval time.Duration) {
	defer r.Release()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		r.Pass(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Release drops the lookups that wait for their caller's credential; Run
// releases them when it returns.
func (r *Resolver) Release() {
	for key, w := range r.waiting {
		r.cfg.Credentials.Forget(w.mac, w.ch)
		delete(r.waiting, key)
	}
}

// Pass runs one pass and returns how many steps it settled.
func (r *Resolver) Pass(ctx context.Context) int {
	now := r.cfg.Now()
	cutoff := now.Add(-max(r.cfg.AbandonAfter, r.cfg.UpstreamTimeout))
	steps, err := r.cfg.Journal.List(journal.Filter{Status: journal.StatusStarted, HoldSet: true, Limit: Batch})
	if err != nil {
		r.cfg.Log.Error("list abandoned steps", slog.Any("error", err))
		return 0
	}
	epoch := r.cfg.Journal.Epoch()
	seen := map[string]bool{}
	n := 0
	for i := range steps {
		st := &steps[i]
		if st.Observed {
			if st.UpdatedAt.Before(cutoff) && r.endObservation(ctx, *st) {
				n++
			}
			continue
		}
		if st.Held() || !st.UpdatedAt.Before(cutoff) || lifecycle.InFlightElsewhere(st, epoch) || r.cfg.Active(st, now, cutoff) {
			continue
		}
		seen[st.Key] = true
		if r.abandon(ctx, *st, now) {
			n++
		}
	}
	r.cfg.PassEnded(cutoff)
	for key, w := range r.waiting {
		if !seen[key] { // settled meanwhile, by a retry or an operator
			r.cfg.Credentials.Forget(w.mac, w.ch)
			delete(r.waiting, key)
		}
	}
	return n
}

// endObservation ends an observation left started (its outcome stayed
// unknown) that nobody came back for: it is never looked up, held or sent,
// only marked failed so that retention removes it. It reports whether it
// wrote.
func (r *Resolver) endObservation(ctx context.Context, st journal.Step) bool {
	rev := st.Revision
	got, err := r.cfg.Journal.Apply(ctx, st.Key, func(cur *journal.Step) (journal.Change, error) {
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
