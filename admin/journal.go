package admin

import (
	"context"
	"encoding/json"
	"io"

	"github.com/toolguard/toolguard/journal"
)

// Journal is the journal as the admin API reads and changes it: a part of
// what every backend provides (*bolt.Journal, *postgres.Journal), checked
// where the API is wired. Apply must be durable before it returns (see
// journal.Mutation).
type Journal interface {
	KeyFinder
	Workflows
	// Apply runs m against the key's current record (possibly more than
	// once) and commits the change durably: approvals and resolutions.
	Apply(ctx context.Context, key string, m journal.Mutation) (journal.Step, error)
	// List returns the steps a filter selects, in a stable order from the
	// start of an index (a list's cursor is an offset into it).
	List(f journal.Filter) ([]journal.Step, error)
	// ForEach walks every step in one consistent snapshot (export).
	ForEach(fn func(journal.Step) error) error
	// Events returns up to limit events after seq, in order.
	Events(after uint64, limit int) ([]journal.Event, error)
	// LastSeq returns the seq of the newest event.
	LastSeq() (uint64, error)
	// ListWorkflows returns up to limit workflows (0: all).
	ListWorkflows(limit int) ([]journal.Workflow, error)
	// PutCheckpoint stores a checkpoint as a compare-and-swap on the
	// workflow's version (If-Match): a stale version is a
	// *journal.VersionError, a missing one on a workflow that has a
	// checkpoint journal.ErrPreconditionRequired.
	PutCheckpoint(scope, id string, ifVersion *uint64, checkpoint json.RawMessage) (journal.Workflow, error)
	// Check verifies the store and toolguard's invariants.
	Check() []error
}

// KeyFinder is a journal that can expand an abbreviated key (FindStep).
type KeyFinder interface {
	// Get returns the key's record or an error wrapping
	// journal.ErrNotFound.
	Get(key string) (journal.Step, error)
	// KeysWithPrefix returns at most limit keys that start with prefix, in
	// key order.
	KeysWithPrefix(prefix string, limit int) ([]string, error)
}

// Workflows is the part of a journal that workflows are read from
// (PickWorkflow, Resume). A workflow is identified by its scope (the
// caller's credential MAC) and id.
type Workflows interface {
	// FindWorkflows returns every scope's record of an id.
	FindWorkflows(id string) ([]journal.Workflow, error)
	// WorkflowSteps returns the steps of one scope's workflow.
	WorkflowSteps(scope, id string) ([]journal.Step, error)
}

// Maintainer is the optional part of a journal that lives in one file: a
// consistent copy for backups. Only the bbolt backend has it; without one
// the backup endpoint answers 501 and names the database's own tools.
type Maintainer interface {
	// WriteTo writes a consistent copy of the journal file.
	WriteTo(w io.Writer) (int64, error)
	// Size is the journal file's size in bytes.
	Size() int64
}
