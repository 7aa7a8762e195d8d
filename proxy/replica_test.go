package proxy

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/problem"
	"github.com/toolguard/toolguard/rules"
)

// replica is a proxy on one memReplica of a shared memJournal, or on
// another Store.
type replica struct {
	srv     *Server
	j       *memReplica
	store   journal.Store
	client  *http.Client
	logs    *syncBuffer
	baseURL string
	// up is the replica's way to its provider.
	up *simUpstream
}

func newReplica(t *testing.T, mem *memJournal, route string, tr http.RoundTripper, opts Options) *replica {
	t.Helper()
	j := mem.replica()
	r := newProxyOn(t, j, mem.now, route, tr, opts)
	r.j = j
	return r
}

// newProxyOn runs a proxy on store with the clock now, whose upstream is
// the simulator tr (see serveSim).
func newProxyOn(t *testing.T, store journal.Store, now func() time.Time, route string, tr http.RoundTripper, opts Options) *replica {
	t.Helper()
	up := serveSim(t, tr)
	route = up.at(route)
	// A route that starts with a credential: line replaces the file's
	// default credential.
	cred := "credential: {header: Authorization}\n"
	if line, rest, ok := strings.Cut(route, "\n"); ok && strings.HasPrefix(line, "credential:") {
		cred, route = line+"\n", rest
	}
	api, err := rules.Parse("test.yaml", []byte("api: test\nhosts: [\"api.test\"]\n"+cred+"routes:\n"+route))
	if err != nil {
		t.Fatal(err)
	}
	set, err := rules.NewSet(api)
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	opts = up.options(opts)
	opts.Rules, opts.Journal, opts.Logger, opts.Secret = set, store, log, []byte("0123456789abcdef0123456789abcdef")
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv.now = now
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("replica %d log:\n%s", store.Epoch(), logs.String())
		}
	})
	pu, _ := url.Parse(ts.URL)
	return &replica{srv: srv, store: store, logs: logs, up: up, baseURL: up.at("http://api.test:80"),
		client: &http.Client{Transport: credentialed{&http.Transport{Proxy: http.ProxyURL(pu)}}}}
}

type reply struct {
	resp *http.Response
	body string
}

func (r *replica) post(t *testing.T, body string) reply {
	t.Helper()
	resp, err := r.client.Post(r.baseURL+"/v1/things", "application/json", strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return reply{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp, string(b)}
}

// postAsync sends body from another goroutine; the reply arrives on the
// channel.
func (r *replica) postAsync(t *testing.T, body string) <-chan reply {
	ch := make(chan reply, 1)
	go func() { ch <- r.post(t, body) }()
	return ch
}

// releaser returns a function that closes gate once; it also runs when
// the test ends (before the servers close), so a test that fails while a
// call is held does not hang.
func releaser(t *testing.T, gate chan struct{}) func() {
	var once sync.Once
	release := func() { once.Do(func() { close(gate) }) }
	t.Cleanup(release)
	return release
}

const irreversibleRoute = `  - name: create
    match: POST /v1/things
    effect: irreversible
    operation_id: body:id
`

// A duplicate that reaches another replica while the first call is in
// flight there waits for its outcome (woken by Watch) and replays it: one
// upstream effect, one answer.
func TestReplicaDuplicateWaitsAndReplays(t *testing.T) {
	tr := &scriptedTransport{
		reached: []chan struct{}{make(chan struct{})},
		gates:   []chan struct{}{make(chan struct{})},
		answers: []string{`{"id":"first"}`, `{"id":"second"}`},
	}
	mem := newMemJournal(time.Now)
	a := newReplica(t, mem, irreversibleRoute, tr, Options{})
	b := newReplica(t, mem, irreversibleRoute, tr, Options{})
	release := releaser(t, tr.gates[0])
	first := a.postAsync(t, `{"n":1}`)
	<-tr.reached[0]
	second := b.postAsync(t, `{"n":1}`)
	<-mem.watched // b waits for the step to change
	release()
	ra, rb := <-first, <-second
	if ra.resp.StatusCode != 201 || rb.resp.StatusCode != 201 || ra.body != rb.body {
		t.Fatalf("answers differ: %d %s / %d %s", ra.resp.StatusCode, ra.body, rb.resp.StatusCode, rb.body)
	}
	if o := rb.resp.Header.Get(HeaderOutcome); o != OutcomeReplayed {
		t.Fatalf("duplicate on the other replica: outcome %q, want replayed", o)
	}
	if n := tr.calls.Load(); n != 1 {
		t.Fatalf("upstream calls = %d, want 1", n)
	}
}

// Past in_flight_wait the duplicate gets 409 in-progress with Retry-After,
// and nothing is sent.
func TestReplicaDuplicateGivesUp(t *testing.T) {
	tr := &scriptedTransport{
		reached: []chan struct{}{make(chan struct{})},
		gates:   []chan struct{}{make(chan struct{})},
		answers: []string{`{"id":"first"}`},
	}
	mem := newMemJournal(time.Now)
	a := newReplica(t, mem, irreversibleRoute, tr, Options{})
	b := newReplica(t, mem, irreversibleRoute, tr, Options{InFlightWait: 100 * time.Millisecond})
	release := releaser(t, tr.gates[0])
	first := a.postAsync(t, `{"n":1}`)
	<-tr.reached[0]
	rb := b.post(t, `{"n":1}`)
	if rb.resp.StatusCode != http.StatusConflict || !strings.Contains(rb.body, problem.InProgress) || rb.resp.Header.Get("Retry-After") == "" {
		t.Fatalf("duplicate: %d %s (Retry-After %q), want 409 in-progress with Retry-After", rb.resp.StatusCode, rb.body, rb.resp.Header.Get("Retry-After"))
	}
	release()
	<-first
	if n := tr.calls.Load(); n != 1 {
		t.Fatalf("upstream calls = %d, want 1", n)
	}
}

// A long call renews its lease (heartbeats), so a duplicate on another
// replica keeps waiting instead of taking the step over.
func TestReplicaHeartbeatKeepsLease(t *testing.T) {
	tr := &scriptedTransport{
		reached: []chan struct{}{make(chan struct{})},
		gates:   []chan struct{}{make(chan struct{})},
		answers: []string{`{"id":"first"}`, `{"id":"second"}`},
	}
	mem := newMemJournal(time.Now)
	const lease = 60 * time.Millisecond
	a := newReplica(t, mem, nativeRoute, tr, Options{Lease: lease})
	b := newReplica(t, mem, nativeRoute, tr, Options{Lease: lease})
	release := releaser(t, tr.gates[0])
	first := a.postAsync(t, `{"n":1}`)
	<-tr.reached[0]
	second := b.postAsync(t, `{"n":1}`)
	<-mem.watched
	for range 6 { // two leases' worth of renewals
		<-mem.renewed
	}
	release()
	ra, rb := <-first, <-second
	if n := tr.calls.Load(); n != 1 {
		t.Fatalf("upstream calls = %d, want 1: the lease lapsed although it was renewed", n)
	}
	if ra.body != rb.body || rb.resp.Header.Get(HeaderOutcome) != OutcomeReplayed {
		t.Fatalf("duplicate: %q %s, first %s", rb.resp.Header.Get(HeaderOutcome), rb.body, ra.body)
	}
}

// A replica that lost its lease (cut off, renewals failing) is taken over
// through the recovery table, never by a blind re-send: an irreversible
// route without a lookup is held for review; a native route is re-sent
// with its key. Either way the takeover claims the step, and the old
// owner's late outcome is refused.
func TestReplicaLapsedLeaseTakeover(t *testing.T) {
	tests := []struct {
		name    string
		route   string
		status  int
		outcome string
		calls   int64
		hold    journal.Hold
	}{
		{name: "irreversible, no lookup", route: irreversibleRoute, status: http.StatusConflict, outcome: OutcomeBlocked, calls: 1, hold: journal.HoldNeedsReview},
		{name: "native idempotency", route: nativeRoute, status: http.StatusCreated, outcome: OutcomeRecovered, calls: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := &scriptedTransport{
				reached: []chan struct{}{make(chan struct{})},
				gates:   []chan struct{}{make(chan struct{})},
				answers: []string{`{"id":"late"}`, `{"id":"second"}`},
			}
			mem := newMemJournal(time.Now)
			const lease = 30 * time.Millisecond
			// a's call outlives its lease: it waits for the gate, however
			// long, as a worker delayed past its lease.
			a := newReplica(t, mem, tc.route, tr, Options{Lease: lease, UpstreamTimeout: time.Minute})
			b := newReplica(t, mem, tc.route, tr, Options{Lease: lease, UpstreamTimeout: lease})
			mem.renewFault = func(epoch uint64) error {
				if epoch == a.j.epoch {
					return errors.New("connection to the journal lost")
				}
				return nil
			}
			release := releaser(t, tr.gates[0])
			first := a.postAsync(t, `{"n":1}`)
			<-tr.reached[0]
			steps, _ := b.j.List(journal.Filter{}) // the claim is written before the call is sent
			if len(steps) != 1 {
				t.Fatalf("steps = %+v, want the claimed one", steps)
			}
			key := steps[0].Key
			for st, _ := b.j.Get(key); st.LeaseUntil.After(time.Now()) || time.Since(st.UpdatedAt) < lease; st, _ = b.j.Get(key) {
				time.Sleep(lease / 3) // a's lease and the settle window pass on the wall clock
			}
			rb := b.post(t, `{"n":1}`)
			if rb.resp.StatusCode != tc.status || rb.resp.Header.Get(HeaderOutcome) != tc.outcome {
				t.Fatalf("retry on the other replica: %d %q %s, want %d %s", rb.resp.StatusCode, rb.resp.Header.Get(HeaderOutcome), rb.body, tc.status, tc.outcome)
			}
			release() // the old owner's call returns now
			<-first
			st, _ := b.j.Get(key)
			if st.Epoch != b.j.epoch || st.Hold != tc.hold {
				t.Fatalf("step: epoch %d hold %s, want taken over by epoch %d, hold %s", st.Epoch, st.Hold, b.j.epoch, tc.hold)
			}
			if tc.hold == journal.HoldNone && st.OperationID != "second" {
				t.Fatalf("the old owner's late outcome was written: operation %q", st.OperationID)
			}
			if n := tr.calls.Load(); n != tc.calls {
				t.Fatalf("upstream calls = %d, want %d", n, tc.calls)
			}
			taken := false
			evs, _ := b.j.Events(0, 0)
			for _, e := range evs {
				taken = taken || e.Type == journal.EventTakenOver
			}
			if !taken {
				t.Fatalf("no taken_over event in %+v", evs)
			}
			if !strings.Contains(a.logs.String(), "fenc") {
				t.Errorf("the old owner's refused write was not logged:\n%s", a.logs.String())
			}
		})
	}
}

// A claim whose commit acknowledgement was lost is never sent on: the
// proxy reads the step again and decides afresh, through the recovery
// table when the claim turns out to be stored.
func TestCommitUnknownNeverSendsBlind(t *testing.T) {
	tests := []struct {
		name   string
		route  string
		stored bool
		status int
		calls  int64
	}{
		{name: "claim stored, irreversible", route: irreversibleRoute, stored: true, status: http.StatusConflict, calls: 0},
		{name: "claim stored, native", route: nativeRoute, stored: true, status: http.StatusCreated, calls: 1},
		{name: "claim lost, irreversible", route: irreversibleRoute, status: http.StatusCreated, calls: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := &scriptedTransport{answers: []string{`{"id":"one"}`}}
			clock := &fakeClock{t: time.Now()}
			mem := newMemJournal(clock.now)
			var faults atomic.Int64
			mem.fault = func(key string, ch journal.Change) error {
				if !ch.Claim || faults.Add(1) > 1 {
					return nil
				}
				// The acknowledgement is lost for good: by the time the
				// step is read again, every window of the claim (its
				// lease, the upstream timeout, this process's flight) has
				// passed.
				clock.add(time.Hour)
				if tc.stored {
					return journal.ErrCommitUnknown
				}
				return errLostBeforeCommit
			}
			p := newReplica(t, mem, tc.route, tr, Options{})
			r := p.post(t, `{"n":1}`)
			if r.resp.StatusCode != tc.status {
				t.Fatalf("answer %d %s, want %d", r.resp.StatusCode, r.body, tc.status)
			}
			if n := tr.calls.Load(); n != tc.calls {
				t.Fatalf("upstream calls = %d, want %d", n, tc.calls)
			}
		})
	}
}

// errLostBeforeCommit is a commit lost before it reached the journal: it
// is reported as ErrCommitUnknown too, and nothing is stored.
var (
	errNotStored        = errors.New("not stored")
	errLostBeforeCommit = errors.Join(journal.ErrCommitUnknown, errNotStored)
)

// A journal that cannot be reached answers 503 with Retry-After, and
// nothing is sent.
func TestJournalUnavailable(t *testing.T) {
	tr := &scriptedTransport{answers: []string{`{"id":"one"}`}}
	mem := newMemJournal(time.Now)
	mem.fault = func(string, journal.Change) error { return journal.ErrUnavailable }
	p := newReplica(t, mem, irreversibleRoute, tr, Options{})
	r := p.post(t, `{"n":1}`)
	if r.resp.StatusCode != http.StatusServiceUnavailable || r.resp.Header.Get("Retry-After") == "" {
		t.Fatalf("answer %d %s (Retry-After %q), want 503 with Retry-After", r.resp.StatusCode, r.body, r.resp.Header.Get("Retry-After"))
	}
	if n := tr.calls.Load(); n != 0 {
		t.Fatalf("upstream calls = %d, want 0", n)
	}
}

// Mutations may run more than once (an optimistic backend runs them again
// after losing a race): concurrent duplicates still make one upstream call,
// all get its answer, and no flight is left registered.
func TestMutationsRunTwice(t *testing.T) {
	gate, reached := make(chan struct{}), make(chan struct{})
	var calls atomic.Int64
	tr := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if calls.Add(1) == 1 {
			close(reached)
		}
		<-gate
		return &http.Response{StatusCode: 201, Status: "201 Created", Header: http.Header{}, Body: io.NopCloser(strings.NewReader(`{"id":"one"}`)), Request: req}, nil
	})
	mem := newMemJournal(time.Now)
	mem.runTwice = true
	p := newReplica(t, mem, irreversibleRoute, tr, Options{})
	const n = 8
	replies := make([]<-chan reply, n)
	for i := range n {
		replies[i] = p.postAsync(t, `{"n":1}`)
	}
	<-reached
	close(gate)
	for i := range n {
		r := <-replies[i]
		if r.resp == nil || r.resp.StatusCode != 201 || !strings.Contains(r.body, "one") {
			t.Fatalf("reply %d: %+v", i, r)
		}
	}
	if got := calls.Load(); got != 1 {
		t.Fatalf("upstream calls = %d, want 1", got)
	}
	if c := p.srv.flights.Count(); c != 0 {
		t.Fatalf("%d flights left registered", c)
	}
}

// Regression: decide's mutation registered a new flight each time it ran,
// so its second run (an optimistic backend runs a mutation again after
// losing a race) found the flight of its first run, waited on itself and
// answered 409 in-progress, leaving a flight nobody finished. A retry of
// a started step on a native route is re-sent once, and no flight is left.
func TestMutationsRunTwiceRecovery(t *testing.T) {
	var calls atomic.Int64
	tr := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		status, body := 201, `{"id":"one"}`
		if calls.Add(1) == 1 {
			status, body = 502, `{}` // sent, outcome unknown
		}
		return &http.Response{StatusCode: status, Status: http.StatusText(status), Header: http.Header{}, Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
	})
	mem := newMemJournal(time.Now)
	p := newReplica(t, mem, nativeRoute, tr, Options{InFlightWait: time.Second})
	if r := p.post(t, `{"n":1}`); r.resp.StatusCode != http.StatusGatewayTimeout {
		t.Fatalf("first call: %d %s, want 504 outcome-unknown", r.resp.StatusCode, r.body)
	}
	mem.mu.Lock()
	mem.runTwice = true
	mem.mu.Unlock()
	r := p.post(t, `{"n":1}`)
	if r.resp.StatusCode != 201 || r.resp.Header.Get(HeaderOutcome) != OutcomeRecovered {
		t.Fatalf("retry: %d %q %s, want 201 recovered", r.resp.StatusCode, r.resp.Header.Get(HeaderOutcome), r.body)
	}
	if got := calls.Load(); got != 2 {
		t.Fatalf("upstream calls = %d, want 2 (the call, then one re-send)", got)
	}
	if c := p.srv.flights.Count(); c != 0 {
		t.Fatalf("%d flights left registered", c)
	}
}
