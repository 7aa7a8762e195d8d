package proxy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/journal/bolt"
	"github.com/toolguard/toolguard/lifecycle"
)

const abandonLookupRoute = `  - name: create
    match: POST /v1/things
    effect: irreversible
    operation_id: body:id
    lookup:
      request: GET http://api.test/v1/things?key={{key}}
      found: {status: 200, body: {"data.#": "1"}}
      absent: {status: 200, body: {"data.#": "0"}}
      operation_id: body:data.0.id
`

// abandonUpstream answers every create 502 after taking it (the outcome
// stays unknown) and a lookup with the effect, but only to a request that
// carries the caller's credential.
type abandonUpstream struct {
	posts, lookups, unauthorized atomic.Int64
}

func (u *abandonUpstream) RoundTrip(req *http.Request) (*http.Response, error) {
	answer := func(status int, body string) (*http.Response, error) {
		return &http.Response{StatusCode: status, Status: http.StatusText(status), Header: http.Header{},
			Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
	}
	if req.Method == http.MethodPost {
		u.posts.Add(1)
		return answer(http.StatusBadGateway, `{}`)
	}
	if req.Header.Get("Authorization") != "Bearer sk_caller" {
		u.unauthorized.Add(1)
		return answer(http.StatusUnauthorized, `{}`)
	}
	u.lookups.Add(1)
	return answer(http.StatusOK, `{"data":[{"id":"th_1"}]}`)
}

func postAs(t *testing.T, p *replica, credential, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, p.baseURL+"/v1/things", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", credential)
	resp, err := p.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// The resolver's lookup of an API with a credential header waits for the
// same caller's next guarded request to lend the credential (the journal
// holds none); after AbandonAfter without one it holds the step for review.
// It never sends the call, and acts once per step.
func TestResolverLookupWaitsForCredential(t *testing.T) {
	for _, lent := range []bool{true, false} {
		name := map[bool]string{true: "credential lent", false: "no caller came back"}[lent]
		t.Run(name, func(t *testing.T) {
			j, err := bolt.Open(filepath.Join(t.TempDir(), "tg.db"), bolt.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			up := &abandonUpstream{}
			clock := &fakeClock{t: time.Now()}
			const abandon = time.Minute
			p := newProxyOn(t, j, clock.now, abandonLookupRoute, up, Options{AbandonAfter: abandon})
			r := postAs(t, p, "Bearer sk_caller", `{"n":1}`)
			key := r.Header.Get(HeaderKey)
			if st, _ := j.Get(key); st.Status != journal.StatusStarted || st.CredentialMAC == "" {
				t.Fatalf("step %s (caller %q), want started with its caller's MAC", st.Status, st.CredentialMAC)
			}
			res := p.srv.newResolver()
			defer res.Release()

			if n := res.Pass(context.Background()); n != 0 {
				t.Fatalf("a step touched just now was settled (%d)", n)
			}
			clock.add(abandon + time.Second)
			if n := res.Pass(context.Background()); n != 0 || up.lookups.Load()+up.unauthorized.Load() != 0 {
				t.Fatalf("settled %d, lookups %d/%d before the caller's credential was lent", n, up.lookups.Load(), up.unauthorized.Load())
			}
			if lent {
				// The same caller's next guarded call (another intent) lends it.
				postAs(t, p, "Bearer sk_caller", `{"n":2}`)
			} else {
				clock.add(abandon)
			}
			if n := res.Pass(context.Background()); n != 1 {
				t.Fatalf("settled %d steps, want 1", n)
			}
			st, _ := j.Get(key)
			if lent && (st.Status != journal.StatusCommitted || st.OperationID != "th_1" || up.lookups.Load() != 1) {
				t.Fatalf("step %s %q after %d lookups, want committed th_1", st.Status, st.OperationID, up.lookups.Load())
			}
			if !lent && (st.Hold != journal.HoldNeedsReview || st.HoldReason != lifecycle.ReasonAbandoned || !strings.Contains(st.LastError, "credential") || up.lookups.Load()+up.unauthorized.Load() != 0) {
				t.Fatalf("step %s/%s %q %q, want held abandoned, no lookup", st.Status, st.Hold, st.HoldReason, st.LastError)
			}
			clock.add(2 * abandon)
			res.Pass(context.Background())
			if again, _ := j.Get(key); again.Revision != st.Revision {
				t.Fatalf("a settled step was settled again: %s/%s rev %d, was rev %d", again.Status, again.Hold, again.Revision, st.Revision)
			}
			wantPosts := int64(1)
			if lent {
				wantPosts = 2 // the second intent's own call
			}
			if got := up.posts.Load(); got != wantPosts {
				t.Fatalf("upstream creates = %d, want %d: the resolver never sends", got, wantPosts)
			}
		})
	}
}

// The resolver leaves alone a step whose call is in flight, in this
// process or on another replica whose lease runs; once that lease has
// lapsed it takes the step over (a claim: the old owner's late write is
// fenced) and holds it for review.
func TestResolverLeavesCallsInFlight(t *testing.T) {
	clock := &fakeClock{t: time.Now()}
	mem := newMemJournal(clock.now)
	tr := &scriptedTransport{
		reached: []chan struct{}{make(chan struct{})},
		gates:   []chan struct{}{make(chan struct{})},
		answers: []string{`{"id":"late"}`},
	}
	opts := Options{AbandonAfter: 10 * time.Minute, UpstreamTimeout: time.Hour, Lease: time.Hour}
	a := newReplica(t, mem, irreversibleRoute, tr, opts)
	b := newReplica(t, mem, irreversibleRoute, tr, opts)
	release := releaser(t, tr.gates[0])
	first := a.postAsync(t, `{"n":1}`)
	<-tr.reached[0]
	steps, _ := a.j.List(journal.Filter{})
	key := steps[0].Key
	clock.add(20 * time.Minute)
	for name, p := range map[string]*replica{"owner": a, "other replica": b} {
		if n := p.srv.newResolver().Pass(context.Background()); n != 0 {
			t.Fatalf("%s settled a call in flight", name)
		}
	}
	clock.add(2 * time.Hour) // a's lease (and flight) lapse: a is gone
	if n := b.srv.newResolver().Pass(context.Background()); n != 1 {
		t.Fatalf("settled %d, want the abandoned step", n)
	}
	st, _ := b.j.Get(key)
	if st.Hold != journal.HoldNeedsReview || st.HoldReason != lifecycle.ReasonAbandoned || st.Epoch != b.j.epoch {
		t.Fatalf("step %s/%s %q epoch %d, want held abandoned, claimed by epoch %d", st.Status, st.Hold, st.HoldReason, st.Epoch, b.j.epoch)
	}
	release()
	<-first
	if after, _ := b.j.Get(key); after.Revision != st.Revision || after.Status != journal.StatusStarted {
		t.Fatalf("the old owner's late outcome was written: %s rev %d", after.Status, after.Revision)
	}
	if n := tr.calls.Load(); n != 1 {
		t.Fatalf("upstream calls = %d, want 1", n)
	}
}

// failingStore refuses writes while failing is set, as a journal that
// lost its database would.
type failingStore struct {
	journal.Store
	failing atomic.Bool
}

func (f *failingStore) Apply(ctx context.Context, key string, m journal.Mutation) (journal.Step, error) {
	if f.failing.Load() {
		return journal.Step{}, fmt.Errorf("apply %s: %w", key, journal.ErrUnavailable)
	}
	return f.Store.Apply(ctx, key, m)
}

// A caller's retry counts as the agent coming back, whatever it was
// answered: here 503, while the journal could not be written. The
// resolver leaves the step to its caller until AbandonAfter has passed
// with no retry.
func TestResolverLeavesRetriedStepsToTheirCaller(t *testing.T) {
	j, err := bolt.Open(filepath.Join(t.TempDir(), "tg.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	store := &failingStore{Store: j}
	clock := &fakeClock{t: time.Now()}
	const abandon = time.Minute
	p := newProxyOn(t, store, clock.now, irreversibleRoute, &abandonUpstream{}, Options{AbandonAfter: abandon, UpstreamTimeout: time.Second, Lease: time.Second})
	key := postAs(t, p, "Bearer sk_caller", `{"n":1}`).Header.Get(HeaderKey)
	res := p.srv.newResolver()
	defer res.Release()

	clock.add(abandon + time.Second)
	store.failing.Store(true)
	if r := postAs(t, p, "Bearer sk_caller", `{"n":1}`); r.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("retry while the journal fails: %d, want 503", r.StatusCode)
	}
	store.failing.Store(false)
	clock.add(abandon / 2)
	if n := res.Pass(context.Background()); n != 0 {
		t.Fatalf("the resolver settled %d steps whose caller was retrying", n)
	}
	clock.add(abandon)
	if n := res.Pass(context.Background()); n != 1 {
		t.Fatalf("settled %d, want the step nobody came back for", n)
	}
	if st, _ := j.Get(key); st.HoldReason != lifecycle.ReasonAbandoned {
		t.Fatalf("step %s/%s %q, want held abandoned", st.Status, st.Hold, st.HoldReason)
	}
}

// abandon_after is never shorter than the lease plus the upstream
// timeout: a step younger than that may still be in flight on a stalled
// owner, or its caller still retrying.
func TestAbandonAfterNeverBelowLeasePlusTimeout(t *testing.T) {
	clock := &fakeClock{t: time.Now()}
	mem := newMemJournal(clock.now)
	p := newReplica(t, mem, irreversibleRoute, &abandonUpstream{}, Options{AbandonAfter: time.Second, Lease: 15 * time.Second, UpstreamTimeout: 30 * time.Second})
	if got := p.srv.opts.AbandonAfter; got != 45*time.Second {
		t.Fatalf("AbandonAfter = %v, want 45s (lease + upstream timeout)", got)
	}
	postAs(t, p, "Bearer sk_caller", `{"n":1}`)
	clock.add(10 * time.Second)
	if n := p.srv.newResolver().Pass(context.Background()); n != 0 {
		t.Fatalf("settled %d steps 10s after their call, with abandon_after 1s below the lease", n)
	}
	clock.add(time.Minute)
	if n := p.srv.newResolver().Pass(context.Background()); n != 1 {
		t.Fatalf("settled %d, want 1 once lease + timeout passed", n)
	}
}

// recordingAbandonUpstream records the lookups it answers.
type recordingAbandonUpstream struct {
	abandonUpstream
	mu   sync.Mutex
	urls []string
}

func (u *recordingAbandonUpstream) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet {
		u.mu.Lock()
		u.urls = append(u.urls, req.URL.String())
		u.mu.Unlock()
	}
	return u.abandonUpstream.RoundTrip(req)
}

// The background resolver's lookup reads the request values its template
// names from the step ({{body.ref}} here): the body is never journaled,
// so they are kept with the step — those values only, a redact path never.
// Before, every such lookup failed with "missing template value" and the
// step ended held.
func TestResolverLookupReadsRecoveryValues(t *testing.T) {
	const route = `  - name: create
    match: POST /v1/things
    effect: irreversible
    operation_id: body:id
    redact: [secret]
    lookup:
      request: GET http://api.test/v1/things?ref={{body.ref}}&s={{body.secret}}
      found: {status: 200, body: {"data.#": "1"}}
      absent: {status: 200, body: {"data.#": "0"}}
      operation_id: body:data.0.id
`
	for _, withSecret := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "redacted field"}[withSecret]
		t.Run(name, func(t *testing.T) {
			j, err := bolt.Open(filepath.Join(t.TempDir(), "tg.db"), bolt.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			up := &recordingAbandonUpstream{}
			clock := &fakeClock{t: time.Now()}
			const abandon = time.Minute
			r := route
			if !withSecret {
				r = strings.Replace(route, "&s={{body.secret}}", "", 1)
			}
			p := newProxyOn(t, j, clock.now, r, up, Options{AbandonAfter: abandon, UpstreamTimeout: time.Second, Lease: time.Second})
			key := postAs(t, p, "Bearer sk_caller", `{"ref":"order-1","secret":"s3cr3t","other":"not kept"}`).Header.Get(HeaderKey)
			st, _ := j.Get(key)
			want := map[string]string{"body.ref": `"order-1"`}
			if len(st.RecoveryValues) != len(want) || st.RecoveryValues["body.ref"] != want["body.ref"] {
				t.Fatalf("recovery values = %v, want %v (no other field, no redacted one)", st.RecoveryValues, want)
			}
			res := p.srv.newResolver()
			defer res.Release()
			clock.add(abandon + time.Second)
			res.Pass(context.Background())
			postAs(t, p, "Bearer sk_caller", `{"ref":"order-2"}`) // lends the credential
			if n := res.Pass(context.Background()); n != 1 {
				t.Fatalf("settled %d, want 1", n)
			}
			got, _ := j.Get(key)
			if withSecret {
				// The redacted value is not kept: the lookup cannot be made,
				// and says unknown rather than a wrong "absent".
				if got.Hold != journal.HoldNeedsReview || len(up.urls) != 0 {
					t.Fatalf("step %s/%s after lookups %v, want held with no lookup", got.Status, got.Hold, up.urls)
				}
				return
			}
			if got.Status != journal.StatusCommitted || len(up.urls) != 1 || !strings.Contains(up.urls[0], "ref=order-1") {
				t.Fatalf("step %s/%s after lookups %v, want committed after one lookup for ref=order-1", got.Status, got.Hold, up.urls)
			}
		})
	}
}
