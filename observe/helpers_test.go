package observe

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/lifecycle"
)

// memJournal is a journal in memory; getErr and applyErr, when set, are
// what every Get and Apply fails with.
type memJournal struct {
	mu       sync.Mutex
	steps    map[string]journal.Step
	getErr   error
	applyErr error
	// block, when set, holds every Apply until it is closed.
	block chan struct{}
}

func (j *memJournal) Get(key string) (journal.Step, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.getErr != nil {
		return journal.Step{}, j.getErr
	}
	st, ok := j.steps[key]
	if !ok {
		return journal.Step{}, fmt.Errorf("get %s: %w", key, journal.ErrNotFound)
	}
	return st, nil
}

func (j *memJournal) Apply(_ context.Context, key string, m journal.Mutation) (journal.Step, error) {
	if j.block != nil {
		<-j.block
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.applyErr != nil {
		return journal.Step{}, j.applyErr
	}
	var cur *journal.Step
	if st, ok := j.steps[key]; ok {
		cur = &st
	}
	ch, err := m(cur)
	if err != nil {
		return journal.Step{}, fmt.Errorf("apply %s: %w", key, err)
	}
	if j.steps == nil {
		j.steps = map[string]journal.Step{}
	}
	j.steps[key] = ch.Step
	return ch.Step, nil
}

func (j *memJournal) step(t *testing.T, key string) journal.Step {
	t.Helper()
	st, err := j.Get(key)
	if err != nil {
		t.Fatalf("the journal has no step %s: %v", key, err)
	}
	return st
}

// fakeCall is a call whose route has no recovery strategy; hold makes
// the version policy hold a new intent.
type fakeCall struct {
	hold      bool
	newIntent atomic.Int32
	released  atomic.Int32
	mu        sync.Mutex
	attempts  []Attempt // what Outcome was asked to record
}

func (c *fakeCall) Situation(cur *journal.Step) lifecycle.Situation {
	return lifecycle.Situation{Step: cur, BodyHash: "h"}
}

func (c *fakeCall) NewIntent(d lifecycle.Decision) lifecycle.Decision {
	c.newIntent.Add(1)
	if c.hold {
		return lifecycle.Decision{Action: lifecycle.ActionHold, Hold: journal.HoldNeedsReview, Why: "version changed"}
	}
	return d
}

// Outcome commits an attempt that was answered; one that was not stays
// started.
func (c *fakeCall) Outcome(a Attempt, _ time.Time) func(journal.Step) journal.Change {
	c.mu.Lock()
	c.attempts = append(c.attempts, a)
	c.mu.Unlock()
	return func(st journal.Step) journal.Change {
		if a.Err != nil || a.Resp == nil {
			return journal.Change{Step: st, Reason: "no answer"}
		}
		st.Status = journal.StatusCommitted
		st.Response = &journal.Response{Status: a.Resp.StatusCode, Body: a.Head}
		return journal.Change{Step: st, Reason: "answered"}
	}
}

func (c *fakeCall) Release() { c.released.Add(1) }

// countingMetrics counts what it is told, by a line per call.
type countingMetrics struct {
	mu    sync.Mutex
	lines []string
}

func (m *countingMetrics) Request(api, route, outcome string) {
	m.add(fmt.Sprintf("request %s %s %s", api, route, outcome))
}

func (m *countingMetrics) Observed(api, route string, w journal.Would) {
	m.add(fmt.Sprintf("observed %s %s %s", api, route, w))
}

func (m *countingMetrics) add(s string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lines = append(m.lines, s)
}

// rig is a Recorder on a memJournal, whose log lines are kept.
type rig struct {
	j   *memJournal
	m   *countingMetrics
	r   *Recorder
	log *syncBuffer
}

func newRig() *rig {
	g := &rig{j: &memJournal{}, m: &countingMetrics{}, log: &syncBuffer{}}
	g.r = NewRecorder(g.j, g.m, slog.New(slog.NewJSONHandler(g.log, nil)))
	return g
}

var testLine = Line{API: "shop", Route: "create", Label: "create", Start: time.Now()}

// fresh is the first record of key, as the proxy makes it.
func fresh(key string) journal.Step {
	return journal.Step{Key: key, API: "shop", Route: "create", Method: http.MethodPost, BodyHash: "h", Workflow: "w1"}
}

// settle waits until the recorder is idle and its writes done.
func (g *rig) settle(t *testing.T) {
	t.Helper()
	select {
	case <-g.r.Idle():
	case <-time.After(5 * time.Second):
		t.Fatal("the recorder is not idle")
	}
	g.r.Wait()
}

// lines are the log lines written so far.
func (g *rig) lines(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(g.log.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// syncBuffer is a bytes.Buffer that background writes may log to.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
