package proxy

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
)

// hidingProvider creates things and hides them from GET while hidden is
// set, as a provider whose reads lag behind its writes; it counts the
// GET probes each replica sends.
type hidingProvider struct {
	hidden atomic.Bool
	probes []atomic.Int64
	// probed receives the replica's index after each probe (buffered,
	// never blocks).
	probed chan int
}

func newHidingProvider(replicas int) *hidingProvider {
	p := &hidingProvider{probes: make([]atomic.Int64, replicas), probed: make(chan int, 10000)}
	p.hidden.Store(true)
	return p
}

// transport is replica i's way to the provider.
func (p *hidingProvider) transport(i int) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		status, body := 201, `{"id":"inv_1","status":"open"}`
		if req.Method == http.MethodGet {
			p.probes[i].Add(1)
			select {
			case p.probed <- i:
			default:
			}
			status = 200
			if p.hidden.Load() {
				status, body = 404, `{"error":"not found"}`
			}
		}
		return &http.Response{StatusCode: status, Status: http.StatusText(status), Header: http.Header{},
			Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
	})
}

// awaitProbe waits for a probe from replica i.
func (p *hidingProvider) awaitProbe(t *testing.T, i int) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case got := <-p.probed:
			if got == i {
				return
			}
		case <-deadline:
			t.Fatalf("no verification probe from replica %d within 10s", i)
		}
	}
}

const verifiedRoute = nativeRoute + `    verify:
      request: GET http://api.test/v1/things/{{operation_id}}
      expect: {status: 200, body: {status: open}}
      within: 1h
`

// Two replicas resume one pending verification: the one whose lease runs
// (the replica that committed the step) probes it, and the other leaves it
// alone. Once the verifier stops renewing its lease, another replica takes
// the verification over and finishes it.
func TestReplicasVerifyOnce(t *testing.T) {
	const lease = 300 * time.Millisecond
	prov := newHidingProvider(3)
	mem := newMemJournal(time.Now)
	opts := Options{Lease: lease, VerifyMaxInterval: 20 * time.Millisecond}
	a := newReplica(t, mem, uncredentialedVerified, prov.transport(0), opts)
	r := a.post(t, `{"n":1}`)
	if r.resp == nil || r.resp.StatusCode != 201 {
		t.Fatalf("create: %+v", r)
	}
	key := r.resp.Header.Get(HeaderKey)
	prov.awaitProbe(t, 0)

	b := newReplica(t, mem, uncredentialedVerified, prov.transport(1), opts)
	c := newReplica(t, mem, uncredentialedVerified, prov.transport(2), opts)
	for _, o := range []*replica{b, c} {
		if n, err := o.srv.ResumeVerifications(); err != nil || n != 0 {
			t.Fatalf("resume on another replica while the verifier's lease runs: %d, %v; want 0", n, err)
		}
	}
	// Three renewals by the verifier span more than a lease, so every
	// pickup pass of b and c (each Lease/3) has seen the verification.
	for range 3 {
		select {
		case <-mem.renewed:
		case <-time.After(10 * time.Second):
			t.Fatal("the verifier does not renew its lease")
		}
	}
	if pb, pc := prov.probes[1].Load(), prov.probes[2].Load(); pb != 0 || pc != 0 {
		t.Fatalf("replicas that do not hold the verification probed it: b %d, c %d", pb, pc)
	}

	a.srv.Close() // the verifier stops: its lease is no longer renewed
	if a.srv.verifications.Verifying(key) {
		t.Fatal("Close returned while the verifier still runs")
	}
	// A probe that Close cancelled may have reached the provider already;
	// closing a's way there waits for it, so nothing of a's arrives later.
	a.up.plain.Close()
	a.up.secure.Close()
	deadline := time.After(10 * time.Second)
	taker := -1
	for taker < 0 {
		select {
		case i := <-prov.probed:
			if i != 0 {
				taker = i
			}
		case <-deadline:
			t.Fatal("no replica took the verification over within 10s")
		}
	}
	prov.hidden.Store(false)
	st := awaitStep(t, b.store, key, func(st journal.Step) bool { return st.Status == journal.StatusVerified })
	if st.Epoch != []*replica{a, b, c}[taker].store.Epoch() {
		t.Fatalf("verified under epoch %d, want the taker's (replica %d)", st.Epoch, taker)
	}
	if other := prov.probes[3-taker].Load(); other != 0 {
		t.Fatalf("both remaining replicas probed: the one that did not take over sent %d probes", other)
	}
	if !hasEvent(mem, key, journal.EventTakenOver) {
		t.Fatal("the takeover of the verification was not recorded")
	}
}

// A verifier that stalls past its lease (it cannot renew) is taken over;
// when it comes back its renewal is refused as fenced and it stops
// probing, and its result could not be written anyway.
func TestStalledVerifierStopsAfterTakeover(t *testing.T) {
	const lease = 300 * time.Millisecond
	prov := newHidingProvider(2)
	mem := newMemJournal(time.Now)
	opts := Options{Lease: lease, VerifyMaxInterval: 20 * time.Millisecond}
	a := newReplica(t, mem, uncredentialedVerified, prov.transport(0), opts)
	var stalled atomic.Bool
	mem.renewFault = func(epoch uint64) error {
		if epoch == a.store.Epoch() && stalled.Load() {
			return journal.ErrUnavailable
		}
		return nil
	}
	r := a.post(t, `{"n":1}`)
	key := r.resp.Header.Get(HeaderKey)
	prov.awaitProbe(t, 0)
	stalled.Store(true)
	b := newReplica(t, mem, uncredentialedVerified, prov.transport(1), opts)
	if _, err := b.srv.ResumeVerifications(); err != nil {
		t.Fatal(err)
	}
	prov.awaitProbe(t, 1) // b took it over once a's lease lapsed
	stalled.Store(false)
	eventually(t, "the stalled verifier stops", func() bool { return !a.srv.verifications.Verifying(key) })
	before := prov.probes[0].Load()
	prov.hidden.Store(false)
	awaitStep(t, b.store, key, func(st journal.Step) bool { return st.Status == journal.StatusVerified })
	if after := prov.probes[0].Load(); after != before {
		t.Fatalf("the fenced verifier kept probing: %d more", after-before)
	}
}

// awaitStep polls key's step until ok, for up to 10s.
func awaitStep(t *testing.T, s journal.Store, key string, ok func(journal.Step) bool) journal.Step {
	t.Helper()
	var st journal.Step
	eventually(t, "step "+key, func() bool {
		var err error
		st, err = s.Get(key)
		return err == nil && ok(st)
	})
	return st
}

func hasEvent(m *memJournal, key string, typ journal.EventType) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.events {
		if e.Key == key && e.Type == typ {
			return true
		}
	}
	return false
}

// eventually polls cond every 10ms until it holds, for up to 10s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("waited 10s for %s", what)
		}
	}
}

// uncredentialedVerified is verifiedRoute in a file with credential: none:
// a verification taken over by another replica then needs no caller's
// credential lent (see parking), which these tests are not about.
const uncredentialedVerified = "credential: none\n" + verifiedRoute
