package postgres

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/journal/bolt"
)

// store is what the differential test drives on both backends.
type store interface {
	Apply(ctx context.Context, key string, m journal.Mutation) (journal.Step, error)
	Get(key string) (journal.Step, error)
	List(f journal.Filter) ([]journal.Step, error)
	Events(after uint64, limit int) ([]journal.Event, error)
	Count() (journal.Counts, error)
	GetWorkflow(scope, id string) (journal.Workflow, error)
	ListWorkflows(limit int) ([]journal.Workflow, error)
	WorkflowSteps(scope, id string) ([]journal.Step, error)
	PutCheckpoint(scope, id string, ifVersion *uint64, cp json.RawMessage) (journal.Workflow, error)
	Sweep(cutoff time.Time, batch int) (int, bool, error)
	Check() []error
}

// stepClock is a clock that advances one second per transition of the
// scenario, whatever the backend reads it for (bbolt also stamps the
// records it reads), so that both backends see the same times.
type stepClock struct{ t time.Time }

func newStepClock() *stepClock { return &stepClock{t: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)} }

func (c *stepClock) now() time.Time { return c.t }
func (c *stepClock) advance()       { c.t = c.t.Add(time.Second) }

// scenario is a run of transitions touching every status, hold and class
// of workflow step, a checkpoint and a sweep.
func scenario(t *testing.T, s store, clock *stepClock) {
	ctx := context.Background()
	set := func(key string, edit func(*journal.Step), claim bool, extra ...journal.Event) {
		t.Helper()
		clock.advance()
		_, err := s.Apply(ctx, key, func(cur *journal.Step) (journal.Change, error) {
			st := journal.Step{Key: key, API: "pay", Route: "charge", Method: "POST", Host: "api.example",
				Path: "/c", BodyHash: "h-" + key, Status: journal.StatusPrepared}
			if cur != nil {
				st = *cur
			}
			edit(&st)
			return journal.Change{Step: st, Claim: claim, Reason: "r-" + key, Extra: extra}, nil
		})
		if err != nil {
			t.Fatalf("Apply %s: %v", key, err)
		}
	}
	ok := &journal.Response{Status: 201, Body: []byte(`{"id":"x"}`), BodyHash: "b"}
	set("a", func(s *journal.Step) { s.Workflow = "w1"; s.PromptVersion = "p1" }, false)
	set("a", func(s *journal.Step) { s.Status = journal.StatusStarted; s.Attempt = 1 }, true)
	set("b", func(s *journal.Step) {
		s.Workflow = "w1"
		s.Hold = journal.HoldAwaitingApproval
		s.PromptVersion = "p2"
	}, false)
	set("c", func(s *journal.Step) { s.Status = journal.StatusStarted }, true)
	set("c", func(s *journal.Step) { s.Hold, s.HoldReason = journal.HoldNeedsReview, "outcome_unknown" }, false,
		journal.Event{Type: "note", Reason: "extra"})
	set("a", func(s *journal.Step) {
		s.Status, s.Response, s.VerifyBy = journal.StatusCommitted, ok, time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	}, false)
	started := func(s *journal.Step) { s.Status = journal.StatusStarted }
	set("d", func(s *journal.Step) { s.Workflow = "w2"; started(s) }, true)
	set("d", func(s *journal.Step) { s.Status = journal.StatusFailed; s.Retryable = true }, false)
	set("e", started, true)
	set("e", func(s *journal.Step) { s.Status, s.Response = journal.StatusCommitted, ok }, false)
	set("b", func(s *journal.Step) { s.Hold, s.Workflow = journal.HoldNone, "w2" }, false)
	set("f", started, true)
	set("f", func(s *journal.Step) { s.Status, s.Response = journal.StatusCommitted, ok }, false)
	set("f", func(s *journal.Step) { s.Status, s.Evidence = journal.StatusVerified, "seen" }, false)
	if _, err := s.PutCheckpoint("", "w1", nil, json.RawMessage(`{"n":1}`)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Sweep(time.Date(2026, 3, 1, 0, 0, 9, 0, time.UTC), 10); err != nil {
		t.Fatal(err)
	}
}

// view is what both backends must agree on, without what the contract
// lets differ (epochs, fences, revisions, leases, event seqs).
func view(t *testing.T, s store) map[string]any {
	out := map[string]any{}
	strip := func(steps []journal.Step) []journal.Step {
		for i := range steps {
			steps[i].Epoch, steps[i].Fence, steps[i].Revision = 0, 0, 0
			steps[i].LeaseUntil, steps[i].ReadAt = time.Time{}, time.Time{}
		}
		return steps
	}
	for name, f := range map[string]journal.Filter{
		"all": {}, "started": {Status: journal.StatusStarted}, "committed": {Status: journal.StatusCommitted},
		"review": {Hold: journal.HoldNeedsReview}, "not held": {HoldSet: true}, "w1": {Workflow: "w1"},
		"w2": {Workflow: "w2"}, "verify": {VerifyPending: true}, "limit": {Limit: 2},
	} {
		steps, err := s.List(f)
		if err != nil {
			t.Fatal(err)
		}
		out["list "+name] = strip(steps)
	}
	evs, err := s.Events(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range evs {
		evs[i].Seq, evs[i].KeySeq, evs[i].Epoch, evs[i].Fence = 0, 0, 0, 0
	}
	out["events"] = evs
	c, err := s.Count()
	if err != nil {
		t.Fatal(err)
	}
	out["count"] = c
	wfs, err := s.ListWorkflows(0)
	if err != nil {
		t.Fatal(err)
	}
	out["workflows"] = wfs
	for _, id := range []string{"w1", "w2"} {
		steps, err := s.WorkflowSteps("", id)
		if err != nil {
			t.Fatal(err)
		}
		out["steps of "+id] = strip(steps)
	}
	return out
}

// The same transitions on bbolt and on PostgreSQL leave the same steps,
// events, counts and workflows.
func TestSameStateAsBolt(t *testing.T) {
	bc, pc := newStepClock(), newStepClock()
	b, err := bolt.Open(filepath.Join(t.TempDir(), "j.db"), bolt.Options{Now: bc.now})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	p := openTest(t, Options{Now: pc.now})
	scenario(t, b, bc)
	scenario(t, p, pc)
	want, got := view(t, b), view(t, p)
	for k := range want {
		if !reflect.DeepEqual(got[k], want[k]) {
			t.Errorf("%s:\npostgres %s\nbbolt    %s", k, dump(got[k]), dump(want[k]))
		}
	}
	for _, err := range b.Check() {
		t.Errorf("bbolt Check: %v", err)
	}
	mustCheck(t, p)
}

func dump(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
