package proxy

import (
	"log/slog"
	"sync"
	"time"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/lifecycle"
	"github.com/toolguard/toolguard/rules"
)

// One verifier per pending verification across replicas. On a journal
// that shares leases between replicas (PostgreSQL: a step's LeaseUntil is
// set), a pending verification is owned by a claim on its committed step,
// like a call in flight:
//
//   - the replica that committed the step already holds its claim, and
//     verifies it without writing anything more;
//   - while its probe loop runs, the verifier renews the claim's lease
//     (verifyLease) every third of it (Store.Renew accepts a committed step whose
//     verification is pending); a renewal refused as fenced stops it;
//   - at start-up and every verifyLease/3 afterwards, each replica lists the
//     pending verifications and claims those whose lease lapsed (the
//     verifier died or stopped), with lifecycle.VerifyClaim; one that another
//     replica still verifies is left alone;
//   - the verifier's final write is fenced by its claim, so a stale
//     verifier's late result is discarded.
//
// On bbolt (one process per file, leases in the process, LeaseUntil zero)
// nothing is claimed: the process verifies what it committed and resumes
// every pending verification once at start-up, as before.

// verifyLease is how long a verification claim lasts without a renewal:
// Options.VerifyLease (recovery.verify_lease), or else the call lease
// (Options.Lease), shortened to the upstream timeout (at
// least 1s) when that is shorter. A verifier renews it every third of
// that, so a replica that stopped is taken over within about one upstream
// timeout, while a probe (itself bounded by the upstream timeout) never
// outlives it unnoticed.
func (s *Server) verifyLease() time.Duration {
	if s.opts.VerifyLease > 0 {
		return s.opts.VerifyLease
	}
	return min(s.opts.Lease, max(s.opts.UpstreamTimeout, time.Second))
}

// verifyPickupBatch bounds the pending verifications one pickup pass
// reads.
const verifyPickupBatch = 1000

// localVerifications are the keys this process verifies, so that a pickup
// pass never starts a second probe loop for one of them.
type localVerifications struct {
	mu sync.Mutex
	m  map[string]struct{}
}

// add reports whether key was added (false: it is verified already).
func (l *localVerifications) add(key string) bool {
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

func (l *localVerifications) remove(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, key)
}

func (l *localVerifications) has(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.m[key]
	return ok
}

// claimVerification makes v's claim this replica's, and reports whether
// to verify: yes for a process-local lease (bbolt) or a claim that is
// ours already; otherwise only when lifecycle.VerifyClaim took over a lapsed
// lease, and v.step is then the claimed record.
func (s *Server) claimVerification(v *verification) bool {
	epoch := s.journal.Epoch()
	if v.step.LeaseUntil.IsZero() || v.step.Epoch == epoch {
		return true
	}
	lease := s.verifyLease()
	got, err := s.journal.Apply(s.bg, v.step.Key, func(cur *journal.Step) (journal.Change, error) {
		if ch, ok := lifecycle.VerifyClaim(*cur, epoch, lease); ok {
			return ch, nil
		}
		return journal.Change{}, journal.ErrNoChange
	})
	if err != nil {
		if s.bg.Err() == nil {
			s.log.Warn("claim verification", slog.String(logKey, v.step.Key), slog.Any("error", err))
		}
		return false
	}
	if got.Epoch != epoch || got.Status != journal.StatusCommitted || got.VerifyBy.IsZero() {
		return false // another replica verifies it, or it is finished
	}
	s.log.Info("verification taken over: its verifier's lease lapsed", slog.String(logKey, got.Key))
	v.step = got
	return true
}

// verifyHeartbeat renews the verification claim's lease every verifyLease/3
// until stop, on journals that share leases; a renewal refused as fenced
// (an operator resolved the step, or another replica took it over after a
// stall) calls fenced, which ends the probe loop.
func (s *Server) verifyHeartbeat(st journal.Step, fenced func()) (stop func()) {
	return s.renewWhile(st, s.verifyLease(), func(err error) {
		s.log.Info("verification stopped: its claim is no longer this replica's", slog.String(logKey, st.Key), slog.Any("error", err))
		fenced()
	}, nil)
}

// pickUpVerifications starts the pending verifications that nobody
// verifies: at start-up (startup) every one this process does not verify
// yet; afterwards only those with a shared lease (a process-local lease
// was resumed at start-up). A verification another replica still
// verifies is left to it. It returns how many it started.
func (s *Server) pickUpVerifications(startup bool) (int, error) {
	limit := verifyPickupBatch
	if startup {
		limit = 100000
	}
	steps, err := s.journal.List(journal.Filter{VerifyPending: true, Limit: limit})
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range steps {
		st := steps[i]
		if s.verifying.has(st.Key) || (!startup && st.LeaseUntil.IsZero()) || lifecycle.VerifyLeaseRunning(&st) {
			continue
		}
		route := s.routeOf(st.API, st.Route)
		if route == nil || route.Verify == nil || st.Status != journal.StatusCommitted {
			continue
		}
		vals := rules.Values{Key: st.Key, OperationID: st.OperationID, Stored: st.RecoveryValues}
		if st.Response != nil && !st.Response.Truncated {
			vals.Response = st.Response.Body
		}
		v := verification{route: route, step: st, vals: vals}
		if route.Verify.Request.Tool != nil && !s.mcpResume(&v) {
			continue
		}
		if s.startVerify(v) {
			n++
		}
	}
	return n, nil
}

// startVerifyPickup runs pickUpVerifications every verifyLease/3 until Close,
// so that a verification whose verifier died is taken over once its lease
// lapses.
func (s *Server) startVerifyPickup() {
	s.bgWork.Add(1)
	go func() {
		defer s.bgWork.Done()
		t := time.NewTicker(max(s.verifyLease()/3, 10*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-s.bg.Done():
				return
			case <-t.C:
			}
			if _, err := s.pickUpVerifications(false); err != nil && s.bg.Err() == nil {
				s.log.Error("pick up pending verifications", slog.Any("error", err))
			}
		}
	}()
}
