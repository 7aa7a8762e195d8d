package bolt

import (
	"encoding/json"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/toolguard/toolguard/journal"
)

// startAs is start with the caller scope mac.
func startAs(key, workflow, mac string) journal.Mutation {
	return func(cur *journal.Step) (journal.Change, error) {
		ch, err := start(key, workflow)(cur)
		ch.Step.CredentialMAC = mac
		return ch, err
	}
}

// A journal written before workflows had scopes kept one record per id,
// counting every caller's steps. The first writable Open splits it: one
// record per (scope, id), counted from the steps, the old checkpoint kept
// where its id has one scope.
func TestOpenScopesOldWorkflows(t *testing.T) {
	path := tempPath(t)
	b, err := Open(path, Options{Now: testClock()})
	if err != nil {
		t.Fatal(err)
	}
	b.anyTransition = true
	mustApply(t, b, "a1", startAs("a1", "shared", "aaaa"))
	mustApply(t, b, "b1", startAs("b1", "shared", "bbbb"))
	mustApply(t, b, "s1", startAs("s1", "solo", "aaaa"))
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// Rewrite the workflows as an older toolguard kept them.
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		if err := tx.DeleteBucket(bucketWorkflows); err != nil {
			return err
		}
		wb, err := tx.CreateBucket(bucketWorkflows)
		if err != nil {
			return err
		}
		old := []journal.Workflow{
			{ID: "shared", Version: 5, Steps: 2, Counts: journal.WorkflowCounts{Started: 2}, Status: journal.WorkflowExecuting},
			{ID: "solo", Version: 7, Steps: 1, Counts: journal.WorkflowCounts{Started: 1}, Checkpoint: json.RawMessage(`{"goal":"g"}`)},
		}
		for i := range old {
			if err := putWorkflow(wb, &old[i]); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketMeta).Delete(keyWorkflowScopes)
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}

	b = mustOpenPath(t, path, Options{Now: testClock()}) // its cleanup runs Check
	for _, tc := range []struct{ scope, id, step string }{{"aaaa", "shared", "a1"}, {"bbbb", "shared", "b1"}, {"aaaa", "solo", "s1"}} {
		w, err := b.GetWorkflow(tc.scope, tc.id)
		if err != nil || w.Steps != 1 || w.Counts.Started != 1 || w.CurrentStep != tc.step {
			t.Errorf("%s in scope %s: %+v, %v; want its one step %s", tc.id, tc.scope, w, err, tc.step)
		}
	}
	if ws, _ := b.FindWorkflows("shared"); len(ws) != 2 {
		t.Errorf("shared: %d records, want 2 (the old unscoped one gone)", len(ws))
	}
	solo, _ := b.GetWorkflow("aaaa", "solo")
	if string(solo.Checkpoint) != `{"goal":"g"}` || solo.Version <= 7 {
		t.Errorf("solo: checkpoint %s version %d, want the old checkpoint and a version past 7", solo.Checkpoint, solo.Version)
	}
}
