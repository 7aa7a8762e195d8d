package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolguard/toolguard/journal"
)

// memFeed is a journal's event feed in memory.
type memFeed struct {
	mu     sync.Mutex
	events []journal.Event
	steps  map[string]journal.Step
}

func newFeed() *memFeed { return &memFeed{steps: map[string]journal.Step{}} }

// add appends an event of key with the next seq (seqs step by 3, as
// PostgreSQL's are not dense) and records the key's step.
func (f *memFeed) add(typ journal.EventType, key string, hold journal.Hold) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	seq := uint64(len(f.events)+1) * 3
	f.events = append(f.events, journal.Event{Seq: seq, Time: time.Now(), Key: key, Type: typ,
		To: journal.StatusPrepared, Hold: hold, Reason: "because " + key})
	f.steps[key] = journal.Step{Key: key, API: "payments", Route: "create_invoice",
		KeyFields: []journal.KeyField{{Field: "customer", Value: `"` + key + `"`}}}
	return seq
}

func (f *memFeed) Events(after uint64, limit int) ([]journal.Event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []journal.Event
	for _, e := range f.events {
		if e.Seq > after && len(out) < limit {
			out = append(out, e)
		}
	}
	return out, nil
}

func (f *memFeed) LastSeq() (uint64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.events) == 0 {
		return 0, nil
	}
	return f.events[len(f.events)-1].Seq, nil
}

func (f *memFeed) Get(key string) (journal.Step, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, ok := f.steps[key]
	if !ok {
		return journal.Step{}, journal.ErrNotFound
	}
	return st, nil
}

var testSecret = []byte("whsec_test_0123456789")

// delivery is one request a receiver got.
type delivery struct {
	id      string
	body    []byte
	payload Payload
	sigErr  error
}

// receiver is a webhook endpoint: it verifies each request's signature,
// answers with status(the request's delivery), and hands it to got.
type receiver struct {
	*httptest.Server
	got    chan delivery
	mu     sync.Mutex
	status func(d delivery) int
}

func newReceiver(t *testing.T, status func(d delivery) int) *receiver {
	r := &receiver{got: make(chan delivery, 100), status: status}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		d := delivery{id: req.Header.Get(HeaderEventID), body: body,
			sigErr: Verify(testSecret, req.Header.Get(HeaderSignature), body, time.Now(), DefaultTolerance)}
		json.Unmarshal(body, &d.payload)
		code := http.StatusOK
		r.mu.Lock()
		if r.status != nil {
			code = r.status(d)
		}
		r.mu.Unlock()
		w.WriteHeader(code)
		r.got <- d
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) setStatus(status func(d delivery) int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status = status
}

// next waits for the receiver's next request.
func (r *receiver) next(t *testing.T) delivery {
	t.Helper()
	select {
	case d := <-r.got:
		if d.sigErr != nil {
			t.Errorf("delivery %s: %v", d.id, d.sigErr)
		}
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("no delivery within 10s")
		return delivery{}
	}
}

// logBuffer collects log lines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// fixture is a notifier under test with its feed, cursors and metrics.
type fixture struct {
	feed    *memFeed
	cursors Cursors
	reg     *prometheus.Registry
	metrics *Metrics
	results chan string // every result recorded, in order
	logs    *logBuffer
}

func newFixture(t *testing.T) *fixture {
	reg := prometheus.NewRegistry()
	return &fixture{feed: newFeed(), cursors: NewFileCursors(filepath.Join(t.TempDir(), "cursors")),
		reg: reg, metrics: NewMetrics(reg), results: make(chan string, 10000), logs: &logBuffer{}}
}

// observed records into the fixture's metrics and tells its results.
type observed struct{ f *fixture }

func (o observed) delivery(result string) {
	o.f.metrics.delivery(result)
	select {
	case o.f.results <- result:
	default: // a dead endpoint's failures may overflow it; tests await others
	}
}

func (o observed) setLag(webhook string, d time.Duration) { o.f.metrics.setLag(webhook, d) }

// await waits until the notifiers recorded n results of the kind.
func (f *fixture) await(t *testing.T, result string, n int) {
	t.Helper()
	for n > 0 {
		select {
		case r := <-f.results:
			if r == result {
				n--
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("still %d %s results to come after 10s", n, result)
		}
	}
}

// options are fast ones: a poll every 2ms, backoff from 1ms to 4ms.
func (f *fixture) options(hooks ...Webhook) Options {
	return Options{Webhooks: hooks, Feed: f.feed, Cursors: f.cursors, ConsoleURL: "http://127.0.0.1:8481/ui/",
		PollInterval: 2 * time.Millisecond, Backoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond,
		Metrics: f.metrics, Logger: slog.New(slog.NewTextHandler(f.logs, nil))}
}

// start runs a notifier of opts until the returned stop is called (or
// the test ends); Init runs first. Its results go to the fixture.
func (f *fixture) start(t *testing.T, opts Options) (stop func()) {
	t.Helper()
	n, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	n.rec = observed{f}
	if err := n.Init(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { n.Run(ctx); close(done) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

// count reads toolguard_notify_deliveries_total{result} from the registry.
func (f *fixture) count(result string) int {
	mfs, err := f.reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "toolguard_notify_deliveries_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == result {
				return int(m.GetCounter().GetValue())
			}
		}
	}
	return -1
}

func (f *fixture) cursor(t *testing.T, url string) uint64 {
	t.Helper()
	seq, _, err := f.cursors.Load(context.Background(), cursorName(url))
	if err != nil {
		t.Fatal(err)
	}
	return seq
}

// TestDeliversInOrder: the holds and settlements after the start, in
// order, signed, with the step's details; nothing else, and nothing from
// before the webhook's cursor was created.
func TestDeliversInOrder(t *testing.T) {
	f := newFixture(t)
	r := newReceiver(t, nil)
	f.feed.add(journal.EventHeld, "before", journal.HoldAwaitingApproval)
	stop := f.start(t, f.options(Webhook{URL: r.URL + "/hook", Secret: testSecret}))
	f.feed.add(journal.EventStarted, "k0", journal.HoldNone)
	held := f.feed.add(journal.EventHeld, "k1", journal.HoldAwaitingApproval)
	f.feed.add(journal.EventCommitted, "k0", journal.HoldNone)
	approved := f.feed.add(journal.EventApproved, "k1", journal.HoldNone)
	abandoned := f.feed.add(journal.EventAbandoned, "k2", journal.HoldNeedsReview)
	f.feed.add(journal.EventAbandoned, "k3", journal.HoldNone)
	want := []struct {
		seq  uint64
		kind Kind
		key  string
	}{{held, KindHeld, "k1"}, {approved, KindSettled, "k1"}, {abandoned, KindHeld, "k2"}}
	for _, w := range want {
		d := r.next(t)
		if d.id != strconv.FormatUint(w.seq, 10) || d.payload.Seq != w.seq || d.payload.Type != w.kind || d.payload.Key != w.key {
			t.Fatalf("delivery %s: %+v; want seq %d, %v of %s", d.id, d.payload, w.seq, w.kind, w.key)
		}
		if d.payload.API != "payments" || d.payload.ConsoleURL != "http://127.0.0.1:8481/ui/#/step/"+w.key || len(d.payload.KeyFields) != 1 {
			t.Errorf("delivery %s lacks the step's details: %+v", d.id, d.payload)
		}
	}
	f.await(t, ResultDelivered, 3)
	stop()
	if n := len(r.got); n != 0 {
		t.Errorf("%d deliveries more than expected", n)
	}
	if got := f.cursor(t, r.URL+"/hook"); got < abandoned {
		t.Errorf("cursor at %d, want at least %d", got, abandoned)
	}
	if f.count(ResultDelivered) != 3 || f.count(ResultFailed) != 0 {
		t.Errorf("metrics: %d delivered, %d failed; want 3, 0", f.count(ResultDelivered), f.count(ResultFailed))
	}
}

// TestRetries: failed attempts are made again with the same body and
// event id, each signed afresh, until one is taken.
func TestRetries(t *testing.T) {
	f := newFixture(t)
	n := 0
	r := newReceiver(t, func(delivery) int {
		if n++; n <= 2 {
			return http.StatusServiceUnavailable
		}
		return http.StatusNoContent
	})
	f.start(t, f.options(Webhook{URL: r.URL, Secret: testSecret}))
	seq := f.feed.add(journal.EventHeld, "k1", journal.HoldNeedsReview)
	first := r.next(t)
	for range 2 {
		d := r.next(t)
		if d.id != strconv.FormatUint(seq, 10) || !bytes.Equal(d.body, first.body) {
			t.Errorf("retry %s differs from the first attempt %s", d.body, first.body)
		}
	}
	// The third attempt was taken; a later event shows the count is done.
	f.feed.add(journal.EventApproved, "k1", journal.HoldNone)
	if d := r.next(t); d.payload.Type != KindSettled {
		t.Fatalf("after the retries: %+v", d.payload)
	}
	f.await(t, ResultDelivered, 2)
	if f.count(ResultFailed) != 2 || f.count(ResultDelivered) != 2 || f.count(ResultDropped) != 0 {
		t.Errorf("metrics: %d failed, %d delivered, %d dropped; want 2, 2, 0", f.count(ResultFailed), f.count(ResultDelivered), f.count(ResultDropped))
	}
}

// TestDropsAfterMaxAttempts: an event whose attempts are spent is dropped
// (logged, counted) and the next one is delivered.
func TestDropsAfterMaxAttempts(t *testing.T) {
	f := newFixture(t)
	r := newReceiver(t, func(d delivery) int {
		if d.payload.Key == "bad" {
			return http.StatusBadRequest
		}
		return http.StatusOK
	})
	opts := f.options(Webhook{URL: r.URL, Secret: testSecret})
	opts.MaxAttempts = 3
	f.start(t, opts)
	f.feed.add(journal.EventHeld, "bad", journal.HoldNeedsReview)
	f.feed.add(journal.EventHeld, "good", journal.HoldNeedsReview)
	for i := range 3 {
		if d := r.next(t); d.payload.Key != "bad" {
			t.Fatalf("attempt %d: %s, want the first event", i+1, d.payload.Key)
		}
	}
	if d := r.next(t); d.payload.Key != "good" {
		t.Fatalf("after the dropped event: %s", d.payload.Key)
	}
	f.await(t, ResultDropped, 1)
	if f.count(ResultDropped) != 1 || f.count(ResultFailed) != 3 {
		t.Errorf("metrics: %d dropped, %d failed; want 1, 3", f.count(ResultDropped), f.count(ResultFailed))
	}
	if !strings.Contains(f.logs.String(), "notification dropped") {
		t.Errorf("no log line for the dropped event:\n%s", f.logs)
	}
}

// TestDeadEndpointBlocksOnlyItself: a webhook that never answers 2xx
// holds back its own events, never another webhook's.
func TestDeadEndpointBlocksOnlyItself(t *testing.T) {
	f := newFixture(t)
	dead := newReceiver(t, func(delivery) int { return http.StatusInternalServerError })
	alive := newReceiver(t, nil)
	f.start(t, f.options(Webhook{URL: dead.URL, Secret: testSecret}, Webhook{URL: alive.URL, Secret: testSecret, Format: FormatSlack}))
	var seqs []uint64
	for i := range 3 {
		seqs = append(seqs, f.feed.add(journal.EventHeld, fmt.Sprint("k", i), journal.HoldAwaitingApproval))
	}
	for _, seq := range seqs {
		if d := alive.next(t); d.id != strconv.FormatUint(seq, 10) {
			t.Fatalf("alive webhook got %s, want %d", d.id, seq)
		}
	}
	if d := dead.next(t); d.id != strconv.FormatUint(seqs[0], 10) {
		t.Errorf("dead webhook got %s, want the first event", d.id)
	}
}

// TestRefused: a dial the egress policy refuses sends nothing and is not
// retried: counted, logged, and the cursor moves on.
func TestRefused(t *testing.T) {
	f := newFixture(t)
	r := newReceiver(t, nil)
	var mu sync.Mutex
	refuse := 2
	opts := f.options(Webhook{URL: r.URL, Secret: testSecret})
	opts.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		defer mu.Unlock()
		if refuse > 0 {
			refuse--
			return nil, fmt.Errorf("%w: refused to connect to %s: the address is in egress.deny (127.0.0.0/8)", ErrRefused, addr)
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	f.start(t, opts)
	f.feed.add(journal.EventHeld, "k1", journal.HoldAwaitingApproval)
	f.feed.add(journal.EventHeld, "k2", journal.HoldAwaitingApproval)
	last := f.feed.add(journal.EventHeld, "k3", journal.HoldAwaitingApproval)
	// The third is delivered, so the two before were handled.
	if d := r.next(t); d.id != strconv.FormatUint(last, 10) {
		t.Fatalf("first request the receiver got: %s, want the third event %d", d.id, last)
	}
	if f.count(ResultRefused) != 2 || f.count(ResultFailed) != 0 {
		t.Errorf("metrics: %d refused, %d failed; want 2, 0", f.count(ResultRefused), f.count(ResultFailed))
	}
	if logs := f.logs.String(); strings.Count(logs, "the address is refused") != 2 || !strings.Contains(logs, "egress.deny (127.0.0.0/8)") {
		t.Errorf("refusals not logged twice with their reason:\n%s", logs)
	}
}

// TestAtLeastOnceAcrossRestart: a notifier stopped before an endpoint took
// an event (a crash) leaves the cursor before it; the next process, on the
// same cursor file, delivers it.
func TestAtLeastOnceAcrossRestart(t *testing.T) {
	f := newFixture(t)
	path := filepath.Join(t.TempDir(), "cursors")
	f.cursors = NewFileCursors(path)
	r := newReceiver(t, func(delivery) int { return http.StatusBadGateway })
	stop := f.start(t, f.options(Webhook{URL: r.URL, Secret: testSecret}))
	seq := f.feed.add(journal.EventHeld, "k1", journal.HoldAwaitingApproval)
	if d := r.next(t); d.id != strconv.FormatUint(seq, 10) {
		t.Fatalf("first attempt: %s", d.id)
	}
	stop()
	for len(r.got) > 0 { // attempts made before the stop
		<-r.got
	}
	r.setStatus(nil)
	f.cursors = NewFileCursors(path) // a new process
	f.start(t, f.options(Webhook{URL: r.URL, Secret: testSecret}))
	if d := r.next(t); d.id != strconv.FormatUint(seq, 10) || d.payload.Key != "k1" {
		t.Fatalf("after the restart: %s %+v, want event %d again", d.id, d.payload, seq)
	}
}

// exclusive runs work of one name at a time, as PostgreSQL's advisory
// locks do across replicas.
type exclusive struct {
	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

func (x *exclusive) run(ctx context.Context, name string, fn func(context.Context) error) (bool, error) {
	x.mu.Lock()
	l, ok := x.locks[name]
	if !ok {
		l = &sync.Mutex{}
		x.locks[name] = l
	}
	x.mu.Unlock()
	if !l.TryLock() {
		return false, nil
	}
	defer l.Unlock()
	return true, fn(ctx)
}

// TestReplicasDeliverOnce: two notifiers sharing the cursors and the
// exclusive lock deliver each event once.
func TestReplicasDeliverOnce(t *testing.T) {
	f := newFixture(t)
	r := newReceiver(t, nil)
	x := &exclusive{locks: map[string]*sync.Mutex{}}
	for range 2 {
		opts := f.options(Webhook{URL: r.URL, Secret: testSecret})
		opts.Exclusive = x.run
		defer f.start(t, opts)()
	}
	const events = 30
	var want []string
	for i := range events {
		want = append(want, strconv.FormatUint(f.feed.add(journal.EventHeld, fmt.Sprint("k", i), journal.HoldNeedsReview), 10))
	}
	var got []string
	for range events {
		got = append(got, r.next(t).id)
	}
	if !slices.Equal(got, want) {
		t.Errorf("deliveries %v, want each event once in order %v", got, want)
	}
	f.await(t, ResultDelivered, events)
	if f.count(ResultDelivered) != events {
		t.Errorf("%d delivered, want %d", f.count(ResultDelivered), events)
	}
}

// TestCursorMoved: notifiers sharing cursors without a lock deliver every
// event at least once, and the cursor only moves forward.
func TestCursorMoved(t *testing.T) {
	f := newFixture(t)
	r := newReceiver(t, nil)
	var stops []func()
	for range 2 {
		stops = append(stops, f.start(t, f.options(Webhook{URL: r.URL, Secret: testSecret})))
	}
	const events = 20
	seen := map[string]bool{}
	var last uint64
	for i := range events {
		last = f.feed.add(journal.EventHeld, fmt.Sprint("k", i), journal.HoldNeedsReview)
	}
	for len(seen) < events {
		seen[r.next(t).id] = true
	}
	for _, stop := range stops {
		stop()
	}
	if got := f.cursor(t, r.URL); got > last {
		t.Errorf("cursor %d beyond the last event %d", got, last)
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	feed, cursors := newFeed(), NewFileCursors(filepath.Join(t.TempDir(), "c"))
	tests := []struct {
		name string
		opts Options
	}{
		{name: "no feed", opts: Options{Cursors: cursors}},
		{name: "no cursors", opts: Options{Feed: feed}},
		{name: "relative URL", opts: Options{Feed: feed, Cursors: cursors, Webhooks: []Webhook{{URL: "/hook"}}}},
		{name: "bad format", opts: Options{Feed: feed, Cursors: cursors, Webhooks: []Webhook{{URL: "http://a/", Format: 9}}}},
		{name: "same URL twice", opts: Options{Feed: feed, Cursors: cursors, Webhooks: []Webhook{{URL: "http://a/"}, {URL: "http://a/"}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.opts); !errors.Is(err, ErrOptions) {
				t.Errorf("New() = %v, want ErrOptions", err)
			}
		})
	}
}

// TestCursorBeyondFeed: a cursor beyond the feed's end at start (the
// journal was replaced, the cursor file kept) comes back to the end, so
// that the new journal's holds are delivered.
func TestCursorBeyondFeed(t *testing.T) {
	f := newFixture(t)
	r := newReceiver(t, nil)
	if _, err := f.cursors.Store(context.Background(), cursorName(r.URL), 0, 1000); err != nil {
		t.Fatal(err)
	}
	f.feed.add(journal.EventHeld, "old", journal.HoldAwaitingApproval)
	f.start(t, f.options(Webhook{URL: r.URL, Secret: testSecret}))
	seq := f.feed.add(journal.EventHeld, "k1", journal.HoldAwaitingApproval)
	if d := r.next(t); d.id != strconv.FormatUint(seq, 10) {
		t.Fatalf("delivery %s, want the new hold %d", d.id, seq)
	}
	if !strings.Contains(f.logs.String(), "the event feed ends before this webhook's cursor") {
		t.Errorf("the reset is not logged:\n%s", f.logs)
	}
}
