package verification

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/rules"
	"github.com/toolguard/toolguard/verifiers"
)

// fakeJournal keeps steps in memory, as a journal whose leases are shared
// between replicas (shared) or kept in the process (LeaseUntil zero). Each
// replica sees it through its own epoch.
type fakeJournal struct {
	mu     sync.Mutex
	steps  map[string]journal.Step
	fence  uint64
	shared bool
	writes chan journal.Step // receives every step written (buffered)
}

func newFakeJournal(shared bool) *fakeJournal {
	return &fakeJournal{steps: map[string]journal.Step{}, shared: shared, writes: make(chan journal.Step, 100)}
}

type replicaView struct {
	*fakeJournal
	epoch uint64
}

func (r replicaView) Epoch() uint64 { return r.epoch }

func (r replicaView) Apply(_ context.Context, key string, mut journal.Mutation) (journal.Step, error) {
	j := r.fakeJournal
	j.mu.Lock()
	defer j.mu.Unlock()
	var cur *journal.Step
	if st, ok := j.steps[key]; ok {
		st.ReadAt = time.Now()
		cur = &st
	}
	ch, err := mut(cur)
	if errors.Is(err, journal.ErrNoChange) && cur != nil {
		return *cur, nil
	}
	if err != nil {
		return journal.Step{}, err
	}
	st := ch.Step
	if ch.Claim {
		j.fence++
		st.Epoch, st.Fence = r.epoch, j.fence
		if j.shared {
			st.LeaseUntil = time.Now().Add(ch.Lease)
		}
	}
	st.Revision++
	j.steps[key] = st
	j.writes <- st
	return st, nil
}

func (r replicaView) List(f journal.Filter) ([]journal.Step, error) {
	j := r.fakeJournal
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []journal.Step
	for _, st := range j.steps {
		if f.VerifyPending && !st.VerifyBy.IsZero() && !st.Held() {
			st.ReadAt = time.Now()
			out = append(out, st)
		}
	}
	return out, nil
}

func (j *fakeJournal) get(key string) journal.Step {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.steps[key]
}

// commit journals a committed step pending verification, claimed by epoch
// with a lease that ends at leaseUntil (zero: a process-local lease).
func (j *fakeJournal) commit(key string, epoch uint64, leaseUntil time.Time, verifyBy time.Time) journal.Step {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.fence++
	st := journal.Step{Key: key, API: "test", Route: "create", Status: journal.StatusCommitted, VerifyBy: verifyBy,
		Epoch: epoch, Fence: j.fence, LeaseUntil: leaseUntil, CredentialMAC: "mac-1", OperationID: "inv_1"}
	j.steps[key] = st
	return st
}

func testRoute(credential string) *rules.Route {
	api := &rules.API{Name: "test", Credential: credential}
	return &rules.Route{API: api, Name: "create", Verify: &rules.Verify{Within: time.Hour}}
}

// prober answers probes from a script (then its last answer), recording
// the credentials each probe carried.
type prober struct {
	mu      sync.Mutex
	answers []verifiers.Answer
	creds   []http.Header
	probed  chan string // the key of each probe (buffered)
}

func newProber(answers ...verifiers.Answer) *prober {
	return &prober{answers: answers, probed: make(chan string, 100)}
}

func (p *prober) probe(_ context.Context, j Job) verifiers.Result {
	p.mu.Lock()
	defer p.mu.Unlock()
	a := p.answers[0]
	if len(p.answers) > 1 {
		p.answers = p.answers[1:]
	}
	p.creds = append(p.creds, j.Creds)
	p.probed <- j.Step.Key
	return verifiers.Result{Answer: a, Evidence: "GET /things/" + j.Step.OperationID + " → " + a.String()}
}

// renewals renews nothing; fence, when closed, reports the claim fenced.
type renewals struct{ fence chan struct{} }

func (r renewals) renew(_ journal.Step, _ time.Duration, fenced func(error)) func() {
	done := make(chan struct{})
	go func() {
		select {
		case <-r.fence:
			fenced(journal.ErrFenced)
		case <-done:
		}
	}()
	return func() { close(done) }
}

func newTestVerifier(t *testing.T, j Journal, p *prober, route *rules.Route, creds *Credentials) *Verifier {
	t.Helper()
	v := New(Config{
		Journal: j, Probe: p.probe, Route: func(api, name string) *rules.Route {
			if api == route.API.Name && name == route.Name {
				return route
			}
			return nil
		},
		Renew: renewals{fence: make(chan struct{})}.renew, Lease: 200 * time.Millisecond, MaxInterval: 5 * time.Millisecond,
		Credentials: creds,
	})
	t.Cleanup(v.Close)
	return v
}

// await waits for a write of key that satisfies ok.
func (j *fakeJournal) await(t *testing.T, key string, ok func(journal.Step) bool) journal.Step {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case st := <-j.writes:
			if st.Key == key && ok(st) {
				return st
			}
		case <-deadline:
			t.Fatalf("no write of %s as expected within 10s; now %+v", key, j.get(key))
		}
	}
}

func TestVerifyOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name      string
		answers   []verifiers.Answer
		verifyBy  time.Duration
		want      journal.Status
		wantHold  journal.Hold
		wantProbe int
	}{
		{name: "visible at once", answers: []verifiers.Answer{verifiers.Yes}, verifyBy: time.Hour, want: journal.StatusVerified, wantProbe: 1},
		{name: "visible after misses", answers: []verifiers.Answer{verifiers.No, verifiers.Unknown, verifiers.Yes}, verifyBy: time.Hour,
			want: journal.StatusVerified, wantProbe: 3},
		{name: "deadline passed: held", answers: []verifiers.Answer{verifiers.No}, verifyBy: -time.Second,
			want: journal.StatusCommitted, wantHold: journal.HoldNeedsReview, wantProbe: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := newFakeJournal(false)
			view := replicaView{j, 1}
			st := j.commit("k1", 1, time.Time{}, time.Now().Add(tc.verifyBy))
			p := newProber(tc.answers...)
			v := newTestVerifier(t, view, p, testRoute(""), nil)
			if !v.Start(Job{Route: testRoute(""), Step: st}) {
				t.Fatal("Start refused a new verification")
			}
			got := j.await(t, "k1", func(s journal.Step) bool { return s.VerifyBy.IsZero() })
			if got.Status != tc.want || got.Hold != tc.wantHold {
				t.Fatalf("status %v hold %v, want %v %v", got.Status, got.Hold, tc.want, tc.wantHold)
			}
			if n := len(p.creds); n != tc.wantProbe {
				t.Fatalf("%d probes, want %d", n, tc.wantProbe)
			}
		})
	}
}

// Sync verifies before it returns.
func TestSyncVerifies(t *testing.T) {
	j := newFakeJournal(false)
	st := j.commit("k1", 1, time.Time{}, time.Now().Add(time.Hour))
	v := newTestVerifier(t, replicaView{j, 1}, newProber(verifiers.Yes), testRoute(""), nil)
	v.Sync(context.Background(), Job{Route: testRoute(""), Step: st})
	if got := j.get("k1"); got.Status != journal.StatusVerified {
		t.Fatalf("after Sync: %v", got.Status)
	}
}

// A verification resumed after a restart has no credential: it waits for
// its caller's next request to lend one, and probes with it.
func TestResumedVerificationWaitsForCredential(t *testing.T) {
	j := newFakeJournal(false)
	j.commit("k1", 1, time.Time{}, time.Now().Add(time.Hour))
	creds := &Credentials{}
	p := newProber(verifiers.Yes)
	route := testRoute("Authorization")
	v := newTestVerifier(t, replicaView{j, 2}, p, route, creds)
	if n, err := v.Resume(); err != nil || n != 1 {
		t.Fatalf("Resume = %d, %v; want 1", n, err)
	}
	for creds.n.Load() == 0 { // the verification registers before it waits
		select {
		case <-p.probed:
			t.Fatal("probed without the caller's credential")
		default:
		}
	}
	creds.Lend("other-caller", route.API, http.Header{"Authorization": {"Bearer other"}})
	creds.Lend("mac-1", route.API, http.Header{"Authorization": {"Bearer sk_1"}, "Cookie": {"c"}})
	j.await(t, "k1", func(s journal.Step) bool { return s.Status == journal.StatusVerified })
	if len(p.creds) != 1 || p.creds[0].Get("Authorization") != "Bearer sk_1" || p.creds[0].Get("Cookie") != "" {
		t.Fatalf("probes carried %v, want the caller's Authorization only", p.creds)
	}
}

// A resumed verification whose caller never comes back is held once its
// deadline passes, unprobed.
func TestResumedVerificationWithoutCredentialIsHeld(t *testing.T) {
	j := newFakeJournal(false)
	j.commit("k1", 1, time.Time{}, time.Now().Add(20*time.Millisecond))
	p := newProber(verifiers.Yes)
	v := newTestVerifier(t, replicaView{j, 2}, p, testRoute("Authorization"), nil)
	if _, err := v.Resume(); err != nil {
		t.Fatal(err)
	}
	got := j.await(t, "k1", func(s journal.Step) bool { return s.Held() })
	if !strings.Contains(got.LastError, "no request with the caller's credential") || len(p.creds) != 0 {
		t.Fatalf("held with %q after %d probes", got.LastError, len(p.creds))
	}
}

// A tool's verification resumed without a known endpoint is held, never
// probed at a guessed URL; with one, it is probed there.
func TestResumedToolVerification(t *testing.T) {
	route := testRoute("")
	route.Verify.Request.Tool = &rules.ToolCall{Name: "get_thing"}
	for _, known := range []bool{false, true} {
		j := newFakeJournal(false)
		j.commit("k1", 1, time.Time{}, time.Now().Add(time.Hour))
		p := newProber(verifiers.Yes)
		v := newTestVerifier(t, replicaView{j, 2}, p, route, nil)
		target, _ := url.Parse("http://mcp.test/mcp")
		v.cfg.ToolTarget = func(string) *url.URL {
			if known {
				return target
			}
			return nil
		}
		n, err := v.Resume()
		if err != nil {
			t.Fatal(err)
		}
		if !known {
			if st := j.get("k1"); n != 0 || !st.Held() || !strings.Contains(st.LastError, "MCP endpoint") {
				t.Fatalf("unknown endpoint: resumed %d, step %+v; want it held", n, st)
			}
			continue
		}
		j.await(t, "k1", func(s journal.Step) bool { return s.Status == journal.StatusVerified })
	}
}

// On a journal that shares leases, a verification whose verifier's lease
// runs is left alone; once it lapses, a pickup pass claims it, and the
// old verifier's late result is fenced out.
func TestClaimsAcrossReplicas(t *testing.T) {
	j := newFakeJournal(true)
	route := testRoute("")
	st := j.commit("k1", 1, time.Now().Add(time.Hour), time.Now().Add(time.Hour))
	p := newProber(verifiers.No)
	b := newTestVerifier(t, replicaView{j, 2}, p, route, nil)
	if n, err := b.Resume(); err != nil || n != 0 {
		t.Fatalf("Resume while another verifier's lease runs = %d, %v; want 0", n, err)
	}
	j.mu.Lock()
	lapsed := j.steps["k1"]
	lapsed.LeaseUntil = time.Now().Add(-time.Millisecond)
	j.steps["k1"] = lapsed
	j.mu.Unlock()
	claimed := j.await(t, "k1", func(s journal.Step) bool { return s.Epoch == 2 }) // the pickup pass took it over
	select {
	case <-p.probed:
	case <-time.After(10 * time.Second):
		t.Fatal("the replica that took over never probed")
	}
	// The old verifier's result is refused: its claim is gone.
	a := newTestVerifier(t, replicaView{j, 1}, newProber(verifiers.Yes), route, nil)
	a.finish(Job{Route: route, Step: st}, verifiers.Result{Evidence: "late"}, true)
	if got := j.get("k1"); got.Status == journal.StatusVerified || got.Fence != claimed.Fence {
		t.Fatalf("the stale verifier's write landed: %+v", got)
	}
}

// A verifier whose claim is fenced while it probes stops probing.
func TestFencedVerifierStops(t *testing.T) {
	j := newFakeJournal(true)
	st := j.commit("k1", 1, time.Now().Add(time.Hour), time.Now().Add(time.Hour))
	p := newProber(verifiers.No)
	fence := make(chan struct{})
	v := New(Config{Journal: replicaView{j, 1}, Probe: p.probe, Route: func(string, string) *rules.Route { return testRoute("") },
		Renew: renewals{fence: fence}.renew, Lease: time.Hour, MaxInterval: time.Millisecond})
	defer v.Close()
	v.Start(Job{Route: testRoute(""), Step: st})
	<-p.probed
	close(fence)
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for v.Verifying("k1") {
		select {
		case <-p.probed:
		case <-tick.C:
		case <-deadline:
			t.Fatal("the fenced verifier kept probing")
		}
	}
	if got := j.get("k1"); got.Status != journal.StatusCommitted || got.VerifyBy.IsZero() {
		t.Fatalf("a fenced verifier wrote: %+v", got)
	}
}

// Close stops the probe loops, leaving their verification pending, and
// Start refuses to begin another.
func TestCloseLeavesVerificationsPending(t *testing.T) {
	j := newFakeJournal(false)
	st := j.commit("k1", 1, time.Time{}, time.Now().Add(time.Hour))
	p := newProber(verifiers.No)
	v := newTestVerifier(t, replicaView{j, 1}, p, testRoute(""), nil)
	v.Start(Job{Route: testRoute(""), Step: st})
	<-p.probed
	v.Close()
	if v.Verifying("k1") || v.Start(Job{Route: testRoute(""), Step: st}) {
		t.Fatal("a verification runs after Close")
	}
	if got := j.get("k1"); got.VerifyBy.IsZero() {
		t.Fatalf("Close finished the verification: %+v", got)
	}
}

// One probe loop per key in a process: Start and Sync leave a key that is
// being verified alone.
func TestOneLoopPerKey(t *testing.T) {
	j := newFakeJournal(false)
	st := j.commit("k1", 1, time.Time{}, time.Now().Add(time.Hour))
	p := newProber(verifiers.No)
	v := newTestVerifier(t, replicaView{j, 1}, p, testRoute(""), nil)
	if !v.Start(Job{Route: testRoute(""), Step: st}) {
		t.Fatal("Start refused a new verification")
	}
	<-p.probed
	if v.Start(Job{Route: testRoute(""), Step: st}) {
		t.Fatal("a second probe loop started for a key being verified")
	}
	v.Sync(context.Background(), Job{Route: testRoute(""), Step: st}) // returns at once
	if !v.Verifying("k1") {
		t.Fatal("the first loop stopped")
	}
}
