package bolt

import (
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/toolguard/toolguard/journal"
)

// keyWorkflowScopes marks a journal whose workflow records are kept per
// scope (the caller's credential MAC). Files written before kept one record
// per workflow id, counting every caller's steps; scopeWorkflows splits
// them once.
var keyWorkflowScopes = []byte("workflows/scoped")

// scopeWorkflows rebuilds the workflow records of a journal written before
// workflows had scopes: one record per (scope, id) that has steps, counted
// afresh from them. An old record's checkpoint moves to the record of its
// id's one scope; when the id has steps in several scopes (or none), it
// stays in the empty scope, where an operator finds it with ?scope=none.
// It runs in the writable Open's transaction and is a no-op once done.
func scopeWorkflows(tx *bbolt.Tx) error {
	meta := tx.Bucket(bucketMeta)
	if meta.Get(keyWorkflowScopes) != nil {
		return nil
	}
	bk, err := openBuckets(tx)
	if err != nil {
		return err
	}
	old := map[string]*journal.Workflow{}
	if err := bk.workflows.ForEach(func(k, v []byte) error {
		w, err := decodeWorkflow(v, string(k))
		if err != nil {
			return err
		}
		old[w.ID] = w
		return nil
	}); err != nil {
		return fmt.Errorf("scope workflows: %w", err)
	}
	for id := range old {
		if err := bk.workflows.Delete([]byte(id)); err != nil {
			return fmt.Errorf("scope workflows: %w", err)
		}
	}
	scopes := map[string]map[string]bool{} // id → its scopes
	if err := bk.byWorkflow.ForEach(func(k, _ []byte) error {
		id, key, ok := parseWorkflowIndexKey(k)
		if !ok {
			return nil // Check reports it
		}
		s, err := bk.getStep(key)
		if err != nil {
			return err
		}
		if scopes[id] == nil {
			scopes[id] = map[string]bool{}
		}
		scopes[id][s.CredentialMAC] = true
		return bk.touchWorkflow(s.CredentialMAC, id, nil, s, s.UpdatedAt)
	}); err != nil {
		return fmt.Errorf("scope workflows: %w", err)
	}
	for id, w := range old {
		if err := keepOldRecord(bk, w, scopes[id]); err != nil {
			return fmt.Errorf("scope workflows: %w", err)
		}
	}
	return meta.Put(keyWorkflowScopes, []byte{1})
}

// keepOldRecord carries what an old record holds beyond its counts (the
// checkpoint, the creation time, a version no reader has seen) into the
// record of its one scope, or back into the empty scope.
func keepOldRecord(bk *buckets, old *journal.Workflow, scopes map[string]bool) error {
	scope := ""
	if len(scopes) == 1 {
		for s := range scopes {
			scope = s
		}
	}
	w, err := loadWorkflow(bk.workflows, scope, old.ID)
	if err != nil {
		if old.Checkpoint == nil {
			return nil // no step of the empty scope and nothing else to keep
		}
		w = &journal.Workflow{ID: old.ID, Scope: scope, Status: journal.WorkflowPlanned, UpdatedAt: old.UpdatedAt}
	}
	w.CreatedAt, w.Checkpoint, w.CheckpointAt = old.CreatedAt, old.Checkpoint, old.CheckpointAt
	w.Version = max(w.Version, old.Version) + 1 // a stale If-Match fails
	return putWorkflow(bk.workflows, w)
}
