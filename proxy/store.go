package proxy

import (
	"context"
	"encoding/json"
	"io"
	"time"

	"github.com/toolguard/toolguard/journal"
)

// Store is the journal as the proxy and its background work
// (verifications, retention sweeps, the resolver of abandoned steps) use
// it. Every backend provides all of it; nothing is discovered at run time.
// Apply must be durable before it returns (see journal.Mutation for what a
// mutation may do).
type Store interface {
	// Apply runs m against the key's current record (possibly more than
	// once, see journal.Mutation) and commits the change durably.
	Apply(ctx context.Context, key string, m journal.Mutation) (journal.Step, error)
	// Get returns the key's record or an error wrapping journal.ErrNotFound.
	Get(key string) (journal.Step, error)
	// List returns the steps a filter selects: by status, hold, workflow
	// or pending verification.
	List(f journal.Filter) ([]journal.Step, error)
	// Count returns the numbers of steps by status and by hold.
	Count() (journal.Counts, error)
	// ForEach walks every step in one consistent snapshot (export).
	ForEach(fn func(journal.Step) error) error
	// Events returns up to limit events after seq, in order.
	Events(after uint64, limit int) ([]journal.Event, error)
	// LastSeq returns the seq of the newest event.
	LastSeq() (uint64, error)
	// Sweep removes finished steps older than cutoff (retention).
	Sweep(cutoff time.Time, batch int) (removed int, more bool, err error)
	// GetWorkflow, ListWorkflows and WorkflowSteps read workflows; a
	// workflow is identified by its scope (the caller's credential MAC)
	// and id. FindWorkflows returns every scope's record of an id.
	GetWorkflow(scope, id string) (journal.Workflow, error)
	FindWorkflows(id string) ([]journal.Workflow, error)
	ListWorkflows(limit int) ([]journal.Workflow, error)
	WorkflowSteps(scope, id string) ([]journal.Step, error)
	// PutCheckpoint stores a checkpoint as a compare-and-swap on the
	// workflow's version (If-Match).
	PutCheckpoint(scope, id string, ifVersion *uint64, checkpoint json.RawMessage) (journal.Workflow, error)
	// Renew extends the lease of a step the caller still owns by its
	// claim: started, or committed with a pending verification
	// (journal.Step.Leasable); an error wrapping journal.ErrFenced
	// otherwise.
	Renew(ctx context.Context, key string, epoch, fence uint64, d time.Duration) error
	// Watch wakes the caller after the key's step changed: a hint only,
	// callers poll as well.
	Watch(key string) (<-chan struct{}, func())
	// Epoch identifies this process's claims.
	Epoch() uint64
	// Ping reports whether the store can be written now (bbolt: an empty
	// write transaction, fsynced; PostgreSQL: a round trip). The proxy
	// calls it only while it is not ready after a failed write, to learn
	// that the store has recovered without waiting for traffic.
	Ping(ctx context.Context) error
	// Check verifies the store and toolguard's invariants.
	Check() []error
	Close() error
}

// Maintainer is the optional part of a journal that lives in one file:
// a consistent copy for backups, and the file's size. Only the bbolt
// backend has it; pass it in Options.Maintainer, or leave it nil: no size
// gauge is exported then.
type Maintainer interface {
	// WriteTo writes a consistent copy of the journal file.
	WriteTo(w io.Writer) (int64, error)
	// Size is the journal file's size in bytes.
	Size() int64
}

var (
	_ Store      = (*journal.Bolt)(nil)
	_ Maintainer = (*journal.Bolt)(nil)
)
