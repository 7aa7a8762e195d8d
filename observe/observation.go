package observe

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/lifecycle"
	"github.com/toolguard/toolguard/metrics"
	"github.com/toolguard/toolguard/policy"
)

// Call is the proxy's side of one observed call: what the recovery table
// reads of it, and how its protocol records an attempt. Its methods are
// called on the call's goroutine; Outcome's change may be applied later,
// in the background.
type Call interface {
	// Situation describes the key's record cur (nil: none) to the
	// recovery table for the call arriving now, as for a guarded call;
	// whether this process has the call in flight is the observation's
	// to add.
	Situation(cur *journal.Step) lifecycle.Situation
	// NewIntent applies the workflow's version policy to d, decided for a
	// key the journal has no record of.
	NewIntent(d lifecycle.Decision) lifecycle.Decision
	// Outcome returns the change that records the call's attempt, as the
	// call's protocol classifies it at now.
	Outcome(a Attempt, now time.Time) func(journal.Step) journal.Change
	// Release gives back what the call holds (its body's room); it is
	// called once, when the observation ends.
	Release()
}

// Line names an observed call on its decision line and in its metrics.
type Line struct {
	API   string    // the API's name
	Route string    // the route's name
	Label string    // the route label of the metrics
	Start time.Time // when the call arrived
}

// Attempt is the observed call's one upstream attempt.
type Attempt struct {
	// Resp is the answer; nil when none came.
	Resp *http.Response
	// Head is the answer's first bytes, up to the stored-response limit.
	Head []byte
	// Err is why the attempt, or the reading of its answer, failed.
	Err error
	// Sent is false only when no connection was made, so nothing can
	// have reached the upstream.
	Sent bool
}

// Observation is one call of observe mode on its way: what enforcement
// would have done with it, decided when it arrived, and what the journal
// is told once its answer has been streamed. It ends once, with Ended or
// Dropped; later calls do nothing.
type Observation struct {
	r    *Recorder
	call Call
	ctx  context.Context
	line Line
	// key is the observation's journal key: the call's derived key, or
	// the refused request's (see Recorder.StartRefused).
	key string
	// fresh is the observation's first record.
	fresh journal.Step
	// base is the key's record as the decision read it; nil when none.
	base  *journal.Step
	would journal.Would
	why   string
	once  sync.Once
}

// Start starts the observation of a call whose key was derived: fresh is
// the first record enforcement would have made for it. It decides what
// enforcement would have done and counts the call in flight until it
// ends. ctx is the agent's request's, for the decision line.
func (r *Recorder) Start(ctx context.Context, c Call, l Line, fresh journal.Step) *Observation {
	o := &Observation{r: r, call: c, ctx: ctx, line: l, key: fresh.Key, fresh: fresh}
	o.decide()
	return r.begin(o)
}

// StartRefused starts the observation of a call that enforcement would
// have refused before deriving its key (would, for why): fresh is its
// record, keyed on the refused request. It counts the call in flight
// until it ends.
func (r *Recorder) StartRefused(ctx context.Context, c Call, l Line, fresh journal.Step, would journal.Would, why string) *Observation {
	o := &Observation{r: r, call: c, ctx: ctx, line: l, key: fresh.Key, fresh: fresh, would: would, why: why}
	return r.begin(o)
}

// begin marks o's record an observation and counts it in flight.
func (r *Recorder) begin(o *Observation) *Observation {
	o.fresh.Observed = true
	o.fresh.Workflow = "" // in the key's scope, but an observation joins no workflow
	r.pending.start(o.key)
	return o
}

// decide says what enforcement would have done with the call: the
// recovery table on the key's record as the journal and this process's
// observations show it, read without a claim. No lookup is made (it would
// be a request of toolguard's own): where enforcement would ask the
// provider, would is lookup.
func (o *Observation) decide() {
	var cur *journal.Step
	st, err := o.r.journal.Get(o.key)
	switch {
	case err == nil:
		cur = &st
	case !errors.Is(err, journal.ErrNotFound):
		o.why = " (the journal could not be read: " + err.Error() + ")"
	}
	inFlight, unsaved := o.r.pending.view(o.key)
	if unsaved != nil && (cur == nil || cur.Observed) {
		cur = unsaved // written next: more recent than the journal's
	}
	sit := o.call.Situation(cur)
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
		d = o.call.NewIntent(d)
	}
	o.base, o.would, o.why = cur, lifecycle.Would(d), d.Why+o.why
}

// Ended journals the observation once the call has ended: a is the
// attempt (its Head the answer's first bytes), sum the hex sha256 of the
// whole answer as streamed ("" when it was not read to its end). It
// writes the decision line and the metrics now, and the journal in the
// background.
func (o *Observation) Ended(a Attempt, sum string) {
	o.once.Do(func() {
		o.call.Release()
		outcome := o.call.Outcome(a, time.Now())
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
		o.r.pending.ended(o.key, &preview.Step)
		o.logLine(a)
		o.r.write(o.key, write)
	})
}

// Dropped ends an observation that journals nothing: the call was not
// sent (the egress checks refused it), and has its own decision line.
func (o *Observation) Dropped() {
	o.once.Do(func() {
		o.call.Release()
		o.r.pending.ended(o.key, nil)
	})
}

// logLine writes the observed call's one decision line and counts it.
func (o *Observation) logLine(a Attempt) {
	l := o.line
	o.r.metrics.Request(l.API, l.Label, metrics.OutcomeObserved)
	o.r.metrics.Observed(l.API, l.Label, o.would)
	status := 0
	if a.Resp != nil {
		status = a.Resp.StatusCode
	}
	why := o.why
	if a.Err != nil {
		why += "; upstream: " + a.Err.Error()
	}
	o.r.log.LogAttrs(o.ctx, slog.LevelInfo, "observed call",
		slog.String(logKey, o.key),
		slog.String(logAPI, l.API),
		slog.String(logRoute, l.Route),
		slog.String(logMode, policy.ModeObserve.String()),
		slog.String(logWould, o.would.String()),
		slog.String(logOutcome, metrics.OutcomeObserved),
		slog.Int(logStatus, status),
		slog.Duration(logDuration, time.Since(l.Start)),
		slog.String(logWhy, why),
	)
}

// Keys of the decision line, as package proxy writes them for every
// other call.
const (
	logKey      = "key"
	logAPI      = "api"
	logRoute    = "route"
	logOutcome  = "outcome"
	logStatus   = "status"
	logDuration = "duration"
	logWhy      = "why"
	logMode     = "mode"
	logWould    = "would"
)
