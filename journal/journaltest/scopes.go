package journaltest

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
)

// as sets the caller scope (credential MAC) of the step m writes.
func as(mac string, m journal.Mutation) journal.Mutation {
	return func(cur *journal.Step) (journal.Change, error) {
		ch, err := m(cur)
		ch.Step.CredentialMAC = mac
		return ch, err
	}
}

// testWorkflowScopes: one workflow id is one record per caller scope (the
// steps' credential MAC): counts, versions, steps and checkpoints of one
// scope never show in another's.
func testWorkflowScopes(t *testing.T, open Opener) {
	s := fresh(t, open)
	const macA, macB = "aaaa", "bbbb"
	apply(t, s, "a1", as(macA, claim("a1", "order-78")))
	apply(t, s, "a1", as(macA, commit(time.Time{})))
	apply(t, s, "b1", as(macB, prepare("b1", "order-78", journal.HoldNone)))
	apply(t, s, "n1", prepare("n1", "order-78", journal.HoldNone))

	for _, tc := range []struct {
		scope, step, status string
	}{
		{macA, "a1", journal.WorkflowCompleted},
		{macB, "b1", journal.WorkflowPlanned},
		{"", "n1", journal.WorkflowPlanned},
	} {
		w, err := s.GetWorkflow(tc.scope, "order-78")
		if err != nil || w.Scope != tc.scope || w.Steps != 1 || w.CurrentStep != tc.step || w.Status != tc.status {
			t.Fatalf("scope %q: %+v, %v; want 1 step %s, %s", tc.scope, w, err, tc.step, tc.status)
		}
		steps, err := s.WorkflowSteps(tc.scope, "order-78")
		if err != nil || len(steps) != 1 || steps[0].Key != tc.step {
			t.Fatalf("scope %q steps: %v, %v; want only %s", tc.scope, steps, err, tc.step)
		}
	}
	if _, err := s.GetWorkflow("cccc", "order-78"); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("unknown scope: %v, want ErrNotFound", err)
	}
	found, err := s.FindWorkflows("order-78")
	if err != nil || len(found) != 3 || found[0].Scope != "" || found[1].Scope != macA || found[2].Scope != macB {
		t.Fatalf("FindWorkflows = %+v, %v; want the scopes \"\", %s, %s in order", found, err, macA, macB)
	}
	if none, err := s.FindWorkflows("order-7"); err != nil || len(none) != 0 {
		t.Fatalf("FindWorkflows of an unknown id (a prefix of a known one) = %+v, %v; want none", none, err)
	}

	// A checkpoint is one scope's: the other scopes neither see it nor
	// need its version.
	b, _ := s.GetWorkflow(macB, "order-78")
	if _, err := s.PutCheckpoint(macB, "order-78", &b.Version, json.RawMessage(`{"goal":"b"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutCheckpoint(macA, "order-78", nil, json.RawMessage(`{"goal":"a"}`)); err != nil {
		t.Fatalf("first checkpoint of scope A after B's: %v", err)
	}
	a, _ := s.GetWorkflow(macA, "order-78")
	b, _ = s.GetWorkflow(macB, "order-78")
	if string(a.Checkpoint) != `{"goal":"a"}` || string(b.Checkpoint) != `{"goal":"b"}` {
		t.Fatalf("checkpoints A %s, B %s", a.Checkpoint, b.Checkpoint)
	}
	if _, err := s.PutCheckpoint("dddd", "new-flow", nil, json.RawMessage(`{"goal":"d"}`)); err != nil {
		t.Fatal(err)
	}
	if w, err := s.GetWorkflow("dddd", "new-flow"); err != nil || w.Scope != "dddd" || w.Status != journal.WorkflowPlanned {
		t.Fatalf("checkpoint-created workflow: %+v, %v", w, err)
	}
	list, err := s.ListWorkflows(0)
	if err != nil || len(list) != 4 {
		t.Fatalf("ListWorkflows = %d records, %v; want 4 (three scopes of order-78, new-flow)", len(list), err)
	}

	// A checkpoint written before any call, in no scope, is adopted by the
	// first caller whose step joins the workflow; a second caller gets a
	// record of its own.
	if _, err := s.PutCheckpoint("", "early", nil, json.RawMessage(`{"goal":"plan"}`)); err != nil {
		t.Fatal(err)
	}
	apply(t, s, "e1", as(macA, prepare("e1", "early", journal.HoldNone)))
	apply(t, s, "e2", as(macB, prepare("e2", "early", journal.HoldNone)))
	early, err := s.FindWorkflows("early")
	if err != nil || len(early) != 2 || early[0].Scope != macA || string(early[0].Checkpoint) != `{"goal":"plan"}` ||
		early[0].Steps != 1 || early[1].Scope != macB || early[1].Checkpoint != nil {
		t.Fatalf("early = %+v, %v; want A's record with the checkpoint, B's without", early, err)
	}
}
