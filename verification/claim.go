package verification

import (
	"log/slog"
	"sync"
	"time"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/lifecycle"
	"github.com/toolguard/toolguard/rules"
	"github.com/toolguard/toolguard/verifiers"
)

// One verifier per pending verification across replicas. On a journal
// that shares leases between replicas (PostgreSQL: a step's LeaseUntil is
// set), a pending verification is owned by a claim on its committed step,
// like a call in flight:
//
//   - the replica that committed the step already holds its claim, and
//     verifies it without writing anything more;
//   - while its probe loop runs, the verifier renews the claim's lease
//     (Config.Lease) every third of it (Store.Renew accepts a committed
//     step whose verification is pending); a renewal refused as fenced
//     stops it;
//   - at start-up and every Lease/3 afterwards, each replica lists the
//     pending verifications and claims those whose lease lapsed (the
//     verifier died or stopped), with lifecycle.VerifyClaim; one that
//     another replica still verifies is left alone;
//   - the verifier's final write is fenced by its claim, so a stale
//     verifier's late result is discarded.
//
// On bbolt (one process per file, leases in the process, LeaseUntil zero)
// nothing is claimed: the process verifies what it committed and resumes
// every pending verification once at start-up.

// pickupBatch bounds the pending verifications one pickup pass reads;
// the pass at start-up reads up to startupBatch.
const (
	pickupBatch  = 1000
	startupBatch = 100000
)

// localKeys are the keys this process verifies, so that a pickup pass
// never starts a second probe loop for one of them.
type localKeys struct {
	mu sync.Mutex
	m  map[string]struct{}
}

// add reports whether key was added (false: it is verified already).
func (l *localKeys) add(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.m[key]; ok {
		return false
	}
	if l.m == nil {
		l.m = map[string]struct{}{}
	}
	l.m[key] = struct{}{}
	return true
}

func (l *localKeys) remove(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, key)
}

func (l *localKeys) has(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.m[key]
	return ok
}

// claim makes j's claim this replica's, and reports whether to verify:
// yes for a process-local lease (bbolt) or a claim that is ours already;
// otherwise only when lifecycle.VerifyClaim took over a lapsed lease, and
// j.Step is then the claimed record.
func (v *Verifier) claim(j *Job) bool {
	epoch := v.cfg.Journal.Epoch()
	if j.Step.LeaseUntil.IsZero() || j.Step.Epoch == epoch {
		return true
	}
	got, err := v.cfg.Journal.Apply(v.ctx, j.Step.Key, func(cur *journal.Step) (journal.Change, error) {
		if ch, ok := lifecycle.VerifyClaim(*cur, epoch, v.cfg.Lease); ok {
			return ch, nil
		}
		return journal.Change{}, journal.ErrNoChange
	})
	if err != nil {
		if v.ctx.Err() == nil {
			v.cfg.Log.Warn("claim verification", slog.String(logKey, j.Step.Key), slog.Any("error", err))
		}
		return false
	}
	if got.Epoch != epoch || got.Status != journal.StatusCommitted || got.VerifyBy.IsZero() {
		return false // another replica verifies it, or it is finished
	}
	v.cfg.Log.Info("verification taken over: its verifier's lease lapsed", slog.String(logKey, got.Key))
	j.Step = got
	return true
}

// heartbeat renews the verification claim's lease every Lease/3 until
// stop, on journals that share leases; a renewal refused as fenced (an
// operator resolved the step, or another replica took it over after a
// stall) calls fenced, which ends the probe loop.
func (v *Verifier) heartbeat(st journal.Step, fenced func()) (stop func()) {
	return v.cfg.Renew(st, v.cfg.Lease, func(err error) {
		v.cfg.Log.Info("verification stopped: its claim is no longer this replica's", slog.String(logKey, st.Key), slog.Any("error", err))
		fenced()
	})
}

// Resume restarts the verifications that were pending when the previous
// process stopped, and then picks up, every third of the verification
// lease, those whose verifier on another replica stopped renewing its
// lease: across replicas, each pending verification is probed by one. The
// original request's credential was never stored: a verification of an
// API with a credential header waits for its caller's next guarded
// request to lend it (see Credentials). It returns how many it resumed.
func (v *Verifier) Resume() (int, error) {
	n, err := v.pickUp(true)
	if err != nil {
		return 0, err
	}
	v.pickup.Do(v.startPickup)
	return n, nil
}

// pickUp starts the pending verifications that nobody verifies: at
// start-up (startup) every one this process does not verify yet;
// afterwards only those with a shared lease (a process-local lease was
// resumed at start-up). A verification another replica still verifies is
// left to it. It returns how many it started.
func (v *Verifier) pickUp(startup bool) (int, error) {
	limit := pickupBatch
	if startup {
		limit = startupBatch
	}
	steps, err := v.cfg.Journal.List(journal.Filter{VerifyPending: true, Limit: limit})
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range steps {
		st := steps[i]
		if v.verifying.has(st.Key) || (!startup && st.LeaseUntil.IsZero()) || lifecycle.VerifyLeaseRunning(&st) {
			continue
		}
		j, ok := v.resumed(st)
		if ok && v.Start(j) {
			n++
		}
	}
	return n, nil
}

// resumed is the Job of a pending verification read from the journal; ok
// is false when it cannot be verified (its rule has no verify any more,
// or a tool's endpoint is not known: that step is then held).
func (v *Verifier) resumed(st journal.Step) (Job, bool) {
	route := v.cfg.Route(st.API, st.Route)
	if route == nil || route.Verify == nil || st.Status != journal.StatusCommitted {
		return Job{}, false
	}
	vals := rules.Values{Key: st.Key, OperationID: st.OperationID, Stored: st.RecoveryValues}
	if st.Response != nil && !st.Response.Truncated {
		vals.Response = st.Response.Body
	}
	j := Job{Route: route, Step: st, Vals: vals}
	if route.Verify.Request.Tool == nil {
		return j, true
	}
	if v.cfg.ToolTarget != nil {
		j.Target = v.cfg.ToolTarget(st.API)
	}
	if j.Target == nil {
		// A forward-proxy step does not keep its endpoint's scheme: it is
		// held rather than probed at a guessed URL.
		v.finish(j, verifiers.Result{Evidence: "not probed: the MCP endpoint of a forward-proxy step is not kept across restarts"}, false)
		return Job{}, false
	}
	return j, true
}

// startPickup runs pickUp every Lease/3 until Close, so that a
// verification whose verifier died is taken over once its lease lapses.
func (v *Verifier) startPickup() {
	v.goBackground(func() {
		t := time.NewTicker(max(v.cfg.Lease/3, 10*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-v.ctx.Done():
				return
			case <-t.C:
			}
			if _, err := v.pickUp(false); err != nil && v.ctx.Err() == nil {
				v.cfg.Log.Error("pick up pending verifications", slog.Any("error", err))
			}
		}
	})
}
