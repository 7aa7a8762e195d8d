package proxy

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
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
			j, err := journal.Open(filepath.Join(t.TempDir(), "tg.db"), journal.Options{})
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
			res := &resolver{waiting: map[string]parkedCred{}}
			defer res.forgetAll(p.srv)

			if n := p.srv.resolveAbandoned(res); n != 0 {
				t.Fatalf("a step touched just now was settled (%d)", n)
			}
			clock.add(abandon + time.Second)
			if n := p.srv.resolveAbandoned(res); n != 0 || up.lookups.Load()+up.unauthorized.Load() != 0 {
				t.Fatalf("settled %d, lookups %d/%d before the caller's credential was lent", n, up.lookups.Load(), up.unauthorized.Load())
			}
			if lent {
				// The same caller's next guarded call (another intent) lends it.
				postAs(t, p, "Bearer sk_caller", `{"n":2}`)
			} else {
				clock.add(abandon)
			}
			if n := p.srv.resolveAbandoned(res); n != 1 {
				t.Fatalf("settled %d steps, want 1", n)
			}
			st, _ := j.Get(key)
			if lent && (st.Status != journal.StatusCommitted || st.OperationID != "th_1" || up.lookups.Load() != 1) {
				t.Fatalf("step %s %q after %d lookups, want committed th_1", st.Status, st.OperationID, up.lookups.Load())
			}
			if !lent && (st.Hold != journal.HoldNeedsReview || st.HoldReason != ReasonAbandoned || !strings.Contains(st.LastError, "credential") || up.lookups.Load()+up.unauthorized.Load() != 0) {
				t.Fatalf("step %s/%s %q %q, want held abandoned, no lookup", st.Status, st.Hold, st.HoldReason, st.LastError)
			}
			clock.add(2 * abandon)
			p.srv.resolveAbandoned(res)
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
		if n := p.srv.resolveAbandoned(&resolver{waiting: map[string]parkedCred{}}); n != 0 {
			t.Fatalf("%s settled a call in flight", name)
		}
	}
	clock.add(2 * time.Hour) // a's lease (and flight) lapse: a is gone
	if n := b.srv.resolveAbandoned(&resolver{waiting: map[string]parkedCred{}}); n != 1 {
		t.Fatalf("settled %d, want the abandoned step", n)
	}
	st, _ := b.j.Get(key)
	if st.Hold != journal.HoldNeedsReview || st.HoldReason != ReasonAbandoned || st.Epoch != b.j.epoch {
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
