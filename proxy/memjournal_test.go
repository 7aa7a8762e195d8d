package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolguard/toolguard/journal"
)

// memJournal is an in-memory journal shared by test replicas that keeps
// leases in the data and numbers claims per replica, as a database backend
// does, so that the proxy's replica logic (waiting for a call in flight
// elsewhere, taking over a lapsed lease, heartbeats, lost commit
// acknowledgements, mutations that run more than once) can be tested in
// one process. It enforces the journal's allowlist. The backends
// themselves are tested by journal/journaltest.
type memJournal struct {
	mu     sync.Mutex
	steps  map[string]journal.Step
	events []journal.Event
	fence  uint64
	epochs uint64
	now    func() time.Time
	watch  map[string][]chan struct{}
	// watched is closed by the first Watch.
	watched     chan struct{}
	watchedOnce sync.Once

	// runTwice makes every mutation run once more on the record before it
	// is written, as an optimistic writer that lost a race does.
	runTwice bool
	// fault, when set, decides an injected failure of an Apply that would
	// write ch: ErrCommitUnknown writes and reports the loss (unless it
	// also wraps errNotStored); any other error writes nothing.
	fault func(key string, ch journal.Change) error
	// renewFault, when set, fails Renew (a replica cut off the database).
	renewFault func(epoch uint64) error
	renews     atomic.Int64
	renewed    chan struct{} // receives after each successful Renew (buffered)
}

func newMemJournal(now func() time.Time) *memJournal {
	return &memJournal{steps: map[string]journal.Step{}, now: now, watch: map[string][]chan struct{}{},
		watched: make(chan struct{}), renewed: make(chan struct{}, 1000)}
}

// replica opens the journal as a new owner with its own epoch.
func (m *memJournal) replica() *memReplica {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.epochs++
	return &memReplica{m: m, epoch: m.epochs}
}

// memReplica is one replica's handle on a memJournal.
type memReplica struct {
	m     *memJournal
	epoch uint64
}

var _ journal.Store = (*memReplica)(nil)

func (r *memReplica) Epoch() uint64 { return r.epoch }

func (r *memReplica) Apply(ctx context.Context, key string, mut journal.Mutation) (journal.Step, error) {
	m := r.m
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	read := func() *journal.Step {
		st, ok := m.steps[key]
		if !ok {
			return nil
		}
		st.ReadAt = now
		return &st
	}
	if m.runTwice {
		mut(read()) // the first run's write lost a race
	}
	cur := read()
	ch, err := mut(read())
	if errors.Is(err, journal.ErrNoChange) {
		if cur == nil {
			return journal.Step{}, fmt.Errorf("apply step %s: %w", key, journal.ErrNotFound)
		}
		return *cur, nil
	}
	if err != nil {
		return journal.Step{}, err
	}
	if err := journal.AllowedChange(cur, &ch); err != nil {
		return journal.Step{}, fmt.Errorf("apply step %s: %w", key, err)
	}
	st := ch.Step
	st.CreatedAt, st.UpdatedAt, st.ReadAt = now, now, now
	st.Epoch, st.Fence, st.Revision, st.LeaseUntil = 0, 0, 0, time.Time{}
	if cur != nil {
		st.CreatedAt, st.Epoch, st.Fence, st.Revision, st.LeaseUntil = cur.CreatedAt, cur.Epoch, cur.Fence, cur.Revision, cur.LeaseUntil
	}
	if ch.Claim {
		m.fence++
		st.Epoch, st.Fence, st.LeaseUntil = r.epoch, m.fence, now.Add(ch.Lease)
	}
	var lost error
	if m.fault != nil {
		if err := m.fault(key, ch); err != nil {
			if !errors.Is(err, journal.ErrCommitUnknown) || errors.Is(err, errNotStored) {
				return journal.Step{}, fmt.Errorf("apply step %s: %w", key, err)
			}
			lost = err
		}
	}
	typ := ch.Event
	if typ == "" {
		typ = journal.EventType(st.Status.String())
	}
	evs := append([]journal.Event{{Type: typ, Reason: ch.Reason, Note: ch.Note}}, ch.Extra...)
	for _, e := range evs {
		st.Revision++
		e.Seq, e.KeySeq, e.Key, e.Time, e.To, e.Hold, e.Epoch, e.Fence = uint64(len(m.events)+1), st.Revision, key, now, st.Status, st.Hold, st.Epoch, st.Fence
		m.events = append(m.events, e)
	}
	m.steps[key] = st
	for _, w := range m.watch[key] {
		select {
		case w <- struct{}{}:
		default:
		}
	}
	if lost != nil {
		return journal.Step{}, fmt.Errorf("apply step %s: %w", key, lost)
	}
	return st, nil
}

func (r *memReplica) Get(key string) (journal.Step, error) {
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	st, ok := r.m.steps[key]
	if !ok {
		return journal.Step{}, fmt.Errorf("get step %s: %w", key, journal.ErrNotFound)
	}
	st.ReadAt = r.m.now()
	return st, nil
}

func (r *memReplica) Renew(ctx context.Context, key string, epoch, fence uint64, d time.Duration) error {
	m := r.m
	if m.renewFault != nil {
		if err := m.renewFault(r.epoch); err != nil {
			return err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	st, ok := m.steps[key]
	if !ok || st.Epoch != epoch || st.Fence != fence || !st.Leasable() {
		return &journal.FencedError{Key: key, HeldEpoch: epoch, HeldFence: fence, Epoch: st.Epoch, Fence: st.Fence, Missing: !ok}
	}
	st.LeaseUntil = m.now().Add(d)
	m.steps[key] = st
	m.renews.Add(1)
	m.renewed <- struct{}{}
	return nil
}

func (r *memReplica) Watch(key string) (<-chan struct{}, func()) {
	m := r.m
	ch := make(chan struct{}, 1)
	m.mu.Lock()
	m.watch[key] = append(m.watch[key], ch)
	m.mu.Unlock()
	m.watchedOnce.Do(func() { close(m.watched) })
	return ch, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		list := m.watch[key]
		for i, c := range list {
			if c == ch {
				m.watch[key] = append(list[:i], list[i+1:]...)
				break
			}
		}
	}
}

func (r *memReplica) List(f journal.Filter) ([]journal.Step, error) {
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	var out []journal.Step
	now := r.m.now()
	for _, st := range r.m.steps {
		st.ReadAt = now
		if (f.Status == 0 || st.Status == f.Status) && (!f.HoldSet || st.Hold == f.Hold) && (!f.VerifyPending || !st.VerifyBy.IsZero()) {
			out = append(out, st)
		}
	}
	return out, nil
}

func (r *memReplica) Events(after uint64, limit int) ([]journal.Event, error) {
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	var out []journal.Event
	for _, e := range r.m.events {
		if e.Seq > after {
			out = append(out, e)
		}
	}
	return out, nil
}

func (r *memReplica) LastSeq() (uint64, error) {
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	return uint64(len(r.m.events)), nil
}

// The rest is not used by the replica tests.

func (r *memReplica) Count() (journal.Counts, error)                { return journal.Counts{}, nil }
func (r *memReplica) CountOpen() (journal.OpenCounts, error)        { return journal.NewOpenCounts(), nil }
func (r *memReplica) ForEach(fn func(journal.Step) error) error     { return nil }
func (r *memReplica) Sweep(time.Time, int) (int, bool, error)       { return 0, false, nil }
func (r *memReplica) ExpireHolds(time.Time, int) (int, bool, error) { return 0, false, nil }
func (r *memReplica) GetWorkflow(string, string) (journal.Workflow, error) {
	return journal.Workflow{}, journal.ErrNotFound
}
func (r *memReplica) FindWorkflows(string) ([]journal.Workflow, error)     { return nil, nil }
func (r *memReplica) ListWorkflows(int) ([]journal.Workflow, error)        { return nil, nil }
func (r *memReplica) WorkflowSteps(string, string) ([]journal.Step, error) { return nil, nil }
func (r *memReplica) PutCheckpoint(string, string, *uint64, json.RawMessage) (journal.Workflow, error) {
	return journal.Workflow{}, errors.New("memJournal keeps no checkpoints")
}
func (r *memReplica) Check() []error { return nil }
func (r *memReplica) Close() error   { return nil }
func (r *memReplica) Path() string   { return "memory" }

// KeysWithPrefix implements journal.Store: the tests name steps by their
// full keys, so no abbreviation is expanded.
func (r *memReplica) KeysWithPrefix(string, int) ([]string, error) { return nil, nil }

// Ping implements journal.Store: the in-memory journal can always write.
func (r *memReplica) Ping(context.Context) error { return nil }
