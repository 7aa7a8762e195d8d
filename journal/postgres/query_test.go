package postgres

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
)

// put writes a step with the given fields as its whole change.
func put(t *testing.T, j *Journal, s journal.Step) journal.Step {
	t.Helper()
	if s.API == "" {
		s.API, s.Route, s.Method, s.Host, s.Path, s.BodyHash = "pay", "charge", "POST", "api.example", "/c", "h-"+s.Key
	}
	if (s.Status == journal.StatusCommitted || s.Status == journal.StatusVerified) && s.Response == nil {
		s.Response = &journal.Response{Status: 200, BodyHash: "r"}
	}
	return mustApply(t, j, s.Key, func(*journal.Step) (journal.Change, error) { return journal.Change{Step: s}, nil })
}

func keys(steps []journal.Step) []string {
	var out []string
	for _, s := range steps {
		out = append(out, s.Key)
	}
	return out
}

func TestListFiltersAndCount(t *testing.T) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); clock = clock.Add(time.Second); return clock }
	j := openTest(t, Options{Now: now})
	put(t, j, journal.Step{Key: "a", Status: journal.StatusStarted, Workflow: "w1"})
	put(t, j, journal.Step{Key: "b", Status: journal.StatusCommitted, Workflow: "w1"})
	put(t, j, journal.Step{Key: "c", Status: journal.StatusStarted, Hold: journal.HoldNeedsReview})
	put(t, j, journal.Step{Key: "d", Status: journal.StatusPrepared, Hold: journal.HoldAwaitingApproval, Workflow: "w2"})
	put(t, j, journal.Step{Key: "e", Status: journal.StatusCommitted, VerifyBy: clock.Add(time.Hour)})
	put(t, j, journal.Step{Key: "f", Status: journal.StatusCommitted, VerifyBy: clock.Add(time.Minute)})
	put(t, j, journal.Step{Key: "a", Status: journal.StatusFailed, Retryable: true, Workflow: "w1"})
	for _, tc := range []struct {
		name   string
		filter journal.Filter
		want   string
	}{
		{name: "all, most recent first", filter: journal.Filter{}, want: "[a f e d c b]"},
		{name: "limit", filter: journal.Filter{Limit: 2}, want: "[a f]"},
		{name: "status, least recent first", filter: journal.Filter{Status: journal.StatusCommitted}, want: "[b e f]"},
		{name: "hold", filter: journal.Filter{Hold: journal.HoldNeedsReview}, want: "[c]"},
		{name: "not held", filter: journal.Filter{HoldSet: true}, want: "[a f e b]"},
		{name: "workflow", filter: journal.Filter{Workflow: "w1"}, want: "[a b]"},
		{name: "workflow and status", filter: journal.Filter{Workflow: "w1", Status: journal.StatusCommitted}, want: "[b]"},
		{name: "verify pending, earliest first", filter: journal.Filter{VerifyPending: true}, want: "[f e]"},
		{name: "nothing", filter: journal.Filter{Workflow: "none"}, want: "[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := j.List(tc.filter)
			if err != nil || fmt.Sprint(keys(got)) != tc.want {
				t.Fatalf("List(%+v) = %v, %v; want %s", tc.filter, keys(got), err, tc.want)
			}
		})
	}
	c, err := j.Count()
	if err != nil {
		t.Fatal(err)
	}
	if c.Steps != 6 || c.Status[journal.StatusCommitted] != 3 || c.Status[journal.StatusVerified] != 0 ||
		c.Hold[journal.HoldNone] != 4 || c.Hold[journal.HoldAwaitingApproval] != 1 || len(c.Status) != 5 || len(c.Hold) != 3 {
		t.Fatalf("Count = %+v", c)
	}
	var walked []string
	if err := j.ForEach(func(s journal.Step) error { walked = append(walked, s.Key); return nil }); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(walked) != "[a b c d e f]" {
		t.Fatalf("ForEach walked %v, want first-written order", walked)
	}
	stop := errors.New("stop")
	if err := j.ForEach(func(journal.Step) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("ForEach returned %v, want fn's error", err)
	}
	mustCheck(t, j)
}

func TestWorkflowsAndCheckpoints(t *testing.T) {
	j := openTest(t, Options{})
	put(t, j, journal.Step{Key: "s1", Status: journal.StatusStarted, Workflow: "w", PromptVersion: "p1"})
	put(t, j, journal.Step{Key: "s2", Status: journal.StatusPrepared, Workflow: "w", Hold: journal.HoldAwaitingApproval, PromptVersion: "p2"})
	w, err := j.GetWorkflow("", "w")
	if err != nil {
		t.Fatal(err)
	}
	if w.Status != journal.WorkflowAwaitingApproval || w.Steps != 2 || w.Held != 1 || w.Version != 2 ||
		w.CurrentStep != "s2" || w.InputHash != "h-s1" || w.PromptVersion != "p1" {
		t.Fatalf("workflow = %+v", w)
	}
	put(t, j, journal.Step{Key: "s2", Status: journal.StatusCommitted, Workflow: "w"})
	put(t, j, journal.Step{Key: "s1", Status: journal.StatusCommitted, Workflow: "w"})
	w, _ = j.GetWorkflow("", "w")
	steps, _ := j.WorkflowSteps("", "w")
	if w.Status != journal.WorkflowCompleted || w.Status != journal.DeriveWorkflowStatus(steps) || len(steps) != 2 {
		t.Fatalf("workflow = %+v with steps %v, want completed", w, keys(steps))
	}
	if _, err := j.GetWorkflow("", "none"); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("GetWorkflow(none): %v", err)
	}

	cp := json.RawMessage(`{"next": "ship",  "n": 1}`)
	w1, err := j.PutCheckpoint("", "w", nil, cp)
	if err != nil || string(w1.Checkpoint) != string(cp) || w1.Version != w.Version+1 {
		t.Fatalf("first checkpoint = %+v, %v", w1, err)
	}
	if _, err := j.PutCheckpoint("", "w", nil, cp); !errors.Is(err, journal.ErrPreconditionRequired) {
		t.Fatalf("checkpoint without a version over one: %v, want ErrPreconditionRequired", err)
	}
	stale := w.Version
	_, err = j.PutCheckpoint("", "w", &stale, cp)
	var ve *journal.VersionError
	if !errors.As(err, &ve) || ve.Current != w1.Version || !errors.Is(err, journal.ErrVersionMismatch) {
		t.Fatalf("stale checkpoint: %v, want a VersionError at %d", err, w1.Version)
	}
	v := w1.Version
	if w2, err := j.PutCheckpoint("", "w", &v, json.RawMessage(`{}`)); err != nil || w2.Version != v+1 {
		t.Fatalf("checkpoint at the current version = %+v, %v", w2, err)
	}
	// A new workflow: version 0 is the only one to name.
	one := uint64(1)
	if _, err := j.PutCheckpoint("", "fresh", &one, cp); !errors.As(err, &ve) {
		t.Fatalf("checkpoint of a new workflow at version 1: %v, want a VersionError", err)
	}
	if _, err := j.GetWorkflow("", "fresh"); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("a refused checkpoint created the workflow: %v", err)
	}
	fresh, err := j.PutCheckpoint("", "fresh", nil, cp)
	if err != nil || fresh.Status != journal.WorkflowPlanned || fresh.Version != 1 {
		t.Fatalf("checkpoint of a new workflow = %+v, %v", fresh, err)
	}
	list, err := j.ListWorkflows(0)
	if err != nil || len(list) != 2 || list[0].ID != "fresh" || list[1].ID != "w" {
		t.Fatalf("ListWorkflows = %+v, %v", list, err)
	}
	mustCheck(t, j)
}

func TestSweepRemovesOnlyFinishedSteps(t *testing.T) {
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	stamp := old
	j := openTest(t, Options{Now: func() time.Time { return stamp }})
	for i := range 7 {
		put(t, j, journal.Step{Key: fmt.Sprintf("done%d", i), Status: journal.StatusCommitted, Workflow: "w"})
	}
	put(t, j, journal.Step{Key: "held", Status: journal.StatusStarted, Hold: journal.HoldNeedsReview})
	put(t, j, journal.Step{Key: "verifying", Status: journal.StatusCommitted, VerifyBy: old.Add(time.Hour)})
	put(t, j, journal.Step{Key: "retryable", Status: journal.StatusFailed, Retryable: true})
	put(t, j, journal.Step{Key: "started", Status: journal.StatusStarted})
	stamp = old.Add(48 * time.Hour)
	put(t, j, journal.Step{Key: "recent", Status: journal.StatusCommitted})
	cutoff := old.Add(24 * time.Hour)

	// Two replicas sweep at once and share the work.
	other := openTest(t, Options{DSN: j.opts.DSN, Schema: j.Schema()})
	var total int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, r := range []*Journal{j, other} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n, more, err := r.Sweep(cutoff, 2)
				if err != nil {
					t.Errorf("Sweep: %v", err)
					return
				}
				mu.Lock()
				total += n
				mu.Unlock()
				if !more {
					return
				}
			}
		}()
	}
	wg.Wait()
	if total != 7 {
		t.Fatalf("sweeps removed %d steps, want the 7 old finished ones", total)
	}
	got, _ := j.List(journal.Filter{})
	if fmt.Sprint(keys(got)) != "[recent verifying started retryable held]" {
		t.Fatalf("left %v", keys(got))
	}
	if _, err := j.GetWorkflow("", "w"); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("emptied workflow: %v, want it dropped", err)
	}
	evs, _ := j.Events(0, 0)
	if len(evs) != 1 || evs[0].Key != "recent" {
		t.Fatalf("events left: %d, want only recent's", len(evs))
	}
	mustCheck(t, j)
}

// Regression: the mutation got a shallow copy, so changing its Response and
// returning ErrNoChange changed the record Apply returned. A mutation that
// changes its copy in depth and then returns ErrNoChange
// leaves Apply's answer (the record as stored) untouched.
func TestNoChangeReturnsTheStoredRecord(t *testing.T) {
	j := openTest(t, Options{})
	put(t, j, journal.Step{Key: "k", Status: journal.StatusCommitted,
		Response: &journal.Response{Status: 201, Body: []byte("stored"), Header: map[string][]string{"X": {"1"}}}})
	got := mustApply(t, j, "k", func(cur *journal.Step) (journal.Change, error) {
		cur.Response.Status, cur.Response.Body[0], cur.Response.Header["X"][0] = 500, 'X', "2"
		return journal.Change{}, journal.ErrNoChange
	})
	if got.Response.Status != 201 || string(got.Response.Body) != "stored" || got.Response.Header.Get("X") != "1" {
		t.Fatalf("Apply returned %+v, want the stored response", got.Response)
	}
}
