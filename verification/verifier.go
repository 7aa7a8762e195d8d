package verification

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/lifecycle"
	"github.com/toolguard/toolguard/metrics"
	"github.com/toolguard/toolguard/rules"
	"github.com/toolguard/toolguard/verifiers"
)

// firstProbeDelay is the wait before the first verification probe; the
// wait doubles after every miss, up to Config.MaxInterval.
const firstProbeDelay = 100 * time.Millisecond

// logKey is the attribute of the step's key in log lines, as the proxy's.
const logKey = "key"

// Job is one pending verification of a committed step.
type Job struct {
	Route *rules.Route
	Step  journal.Step
	Vals  rules.Values
	// Creds are the triggering request's credential headers, in memory
	// only; nil after a restart.
	Creds http.Header
	// Target is the MCP endpoint a tool's verification calls; nil for
	// routes, whose probe names its own URL.
	Target *url.URL
}

// Journal is what a Verifier needs of the journal.
type Journal interface {
	Epoch() uint64
	Apply(ctx context.Context, key string, mut journal.Mutation) (journal.Step, error)
	List(f journal.Filter) ([]journal.Step, error)
}

// Config is what a Verifier works with. Journal, Probe, Route and Renew
// are required.
type Config struct {
	Journal Journal
	// Probe makes one probe of j's effect: yes, no or unknown.
	Probe func(ctx context.Context, j Job) verifiers.Result
	// Route finds a loaded route by API and route name (nil: none).
	Route func(api, name string) *rules.Route
	// ToolTarget is the endpoint of the MCP server an API names, for a
	// tool's verification resumed from the journal; nil when the API's
	// endpoint is not known across restarts (a forward-proxy step).
	ToolTarget func(api string) *url.URL
	// Renew renews st's claim for lease every lease/3 on journals that
	// share leases, until the returned stop; a renewal refused as fenced
	// calls fenced.
	Renew func(st journal.Step, lease time.Duration, fenced func(error)) (stop func())
	// Lease is how long a verification claim lasts without a renewal.
	Lease time.Duration
	// MaxInterval caps the wait between probes.
	MaxInterval time.Duration
	// Credentials lends resumed verifications their caller's credential.
	Credentials *Credentials
	// Metrics counts verification results; nil counts none.
	Metrics *metrics.Metrics
	Log     *slog.Logger
}

// Verifier runs verifications: in the background (Start), before the
// agent's answer (Sync), and those read back from the journal (Resume).
type Verifier struct {
	cfg  Config
	ctx  context.Context
	stop context.CancelFunc
	// mu orders the start of background work against Close: once closed
	// is set, nothing is added to work.
	mu        sync.Mutex
	closed    bool
	work      sync.WaitGroup
	verifying localKeys
	pickup    sync.Once
}

// New returns a Verifier; Close stops its background work.
func New(cfg Config) *Verifier {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Credentials == nil {
		cfg.Credentials = &Credentials{}
	}
	v := &Verifier{cfg: cfg}
	v.ctx, v.stop = context.WithCancel(context.Background())
	return v
}

// Close stops the background verifications, leaving them pending in the
// journal, and waits for them to return.
func (v *Verifier) Close() {
	v.mu.Lock()
	v.closed = true
	v.mu.Unlock()
	v.stop()
	v.work.Wait()
}

// goBackground runs f in a goroutine that Close waits for; it reports
// false, running nothing, once the Verifier is closed.
func (v *Verifier) goBackground(f func()) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return false
	}
	v.work.Add(1)
	go func() {
		defer v.work.Done()
		f()
	}()
	return true
}

// Verifying reports whether this process verifies key now.
func (v *Verifier) Verifying(key string) bool { return v.verifying.has(key) }

// Start verifies a committed step in the background, without delaying the
// agent's answer. It reports false, starting nothing, when this process
// verifies the step already or the Verifier is closed.
func (v *Verifier) Start(j Job) bool {
	if !v.verifying.add(j.Step.Key) {
		return false
	}
	started := v.goBackground(func() {
		defer v.verifying.remove(j.Step.Key)
		v.own(v.ctx, j)
	})
	if !started {
		v.verifying.remove(j.Step.Key)
	}
	return started
}

// Sync verifies a committed step before the agent's answer (mode: sync),
// until ctx ends.
func (v *Verifier) Sync(ctx context.Context, j Job) {
	if !v.verifying.add(j.Step.Key) {
		return
	}
	defer v.verifying.remove(j.Step.Key)
	v.own(ctx, j)
}

// own verifies j under this replica's claim (see claim.go), renewing its
// lease while it probes; it does nothing when another replica holds the
// verification.
func (v *Verifier) own(ctx context.Context, j Job) {
	if !v.claim(&j) {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := v.heartbeat(j.Step, cancel)
	defer stop()
	v.probeLoop(ctx, j)
}

// probeLoop probes until the effect is visible or the step's VerifyBy
// passes, then records verified or holds the step for review. Its writes
// are fenced: a step that an operator resolved or another replica took
// over meanwhile is left alone. When ctx ends first (shutdown, or the
// claim was fenced) the verification stays pending in the journal, and is
// resumed after the restart or by the replica that holds it.
func (v *Verifier) probeLoop(ctx context.Context, j Job) {
	if !v.awaitCredential(ctx, &j) {
		return
	}
	delay := firstProbeDelay
	for {
		res := v.cfg.Probe(ctx, j)
		v.cfg.Log.Debug("verification probe", slog.String(logKey, j.Step.Key), slog.String("answer", res.Answer.String()))
		if res.Answer == verifiers.Yes {
			v.finish(j, res, true)
			return
		}
		wait := time.Until(j.Step.VerifyBy)
		if wait <= 0 {
			v.finish(j, res, false)
			return
		}
		t := time.NewTimer(min(delay, wait))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		delay = min(2*delay, v.cfg.MaxInterval)
	}
}

// awaitCredential parks a verification resumed without its caller's
// credential until the caller's next guarded request lends it, the
// deadline passes (the step is then held, the effect unverified), or ctx
// ends. It reports whether to probe.
func (v *Verifier) awaitCredential(ctx context.Context, j *Job) bool {
	if j.Creds != nil || j.Route.API.Credential == "" || j.Step.CredentialMAC == "" {
		return true
	}
	creds := v.cfg.Credentials
	ch := creds.Wait(j.Step.CredentialMAC)
	t := time.NewTimer(time.Until(j.Step.VerifyBy))
	defer t.Stop()
	select {
	case j.Creds = <-ch:
		return true
	case <-t.C:
		creds.Forget(j.Step.CredentialMAC, ch)
		v.finish(*j, verifiers.Result{Evidence: "not probed: no request with the caller's credential arrived after the restart"}, false)
	case <-ctx.Done():
		creds.Forget(j.Step.CredentialMAC, ch)
	}
	return false
}

// finish records the verification's result, fenced by its claim.
func (v *Verifier) finish(j Job, res verifiers.Result, visible bool) {
	within := j.Route.Verify.Within
	_, err := v.cfg.Journal.Apply(context.Background(), j.Step.Key, journal.Fenced(j.Step.Epoch, j.Step.Fence, func(cur *journal.Step) (journal.Change, error) {
		if ch, ok := lifecycle.VerifyFinish(*cur, visible, res.Evidence, within); ok {
			return ch, nil
		}
		return journal.Change{}, journal.ErrNoChange
	}))
	switch {
	case errors.Is(err, journal.ErrFenced):
		v.cfg.Metrics.Verification("discarded")
		v.cfg.Log.Warn("verification result discarded: the step was taken over", slog.String(logKey, j.Step.Key), slog.Any("error", err))
	case err != nil && !errors.Is(err, journal.ErrNoChange):
		v.cfg.Log.Error("record verification", slog.String(logKey, j.Step.Key), slog.Any("error", err))
	default:
		v.cfg.Metrics.Verification(map[bool]string{true: "verified", false: "not_visible"}[visible])
		v.cfg.Log.Info("verification", slog.String(logKey, j.Step.Key), slog.Bool("visible", visible), slog.String("evidence", res.Evidence))
	}
}
