package journal

import (
	"context"
	"encoding/json"
	"io"
	"time"
)

// Store is the journal every backend provides (bbolt, PostgreSQL), as the
// proxy, its background work (verifications, retention sweeps, the
// resolver of abandoned steps), the admin API and the inspection commands
// use it. Nothing is discovered at run time: what a backend offers beyond
// it is passed explicitly (see Maintainer). Every backend passes the
// conformance suite in package journaltest. Apply must be durable before
// it returns (see Mutation for what a mutation may do).
type Store interface {
	// Apply runs m against the key's current record (possibly more than
	// once, see Mutation) and commits the change durably.
	Apply(ctx context.Context, key string, m Mutation) (Step, error)
	// Get returns the key's record or an error wrapping ErrNotFound.
	Get(key string) (Step, error)
	// KeysWithPrefix returns the keys of steps that start with prefix, in
	// key order, at most limit of them (limit 0 or less means 1). An empty
	// prefix matches nothing.
	KeysWithPrefix(prefix string, limit int) ([]string, error)
	// List returns the steps a filter selects: by status, hold, workflow
	// or pending verification.
	List(f Filter) ([]Step, error)
	// Count returns the numbers of steps by status and by hold.
	Count() (Counts, error)
	// CountOpen returns the numbers of started and held steps. Its cost
	// grows with those steps, not with the journal (PostgreSQL reads them
	// from indexes, where Count reads every row): gauges scraped every few
	// seconds and the startup line read it.
	CountOpen() (OpenCounts, error)
	// ForEach walks every step in one consistent snapshot (export).
	ForEach(fn func(Step) error) error
	// Events returns up to limit events after seq, in order.
	Events(after uint64, limit int) ([]Event, error)
	// LastSeq returns the seq of the newest event.
	LastSeq() (uint64, error)
	// Sweep removes finished steps older than cutoff (retention).
	Sweep(cutoff time.Time, batch int) (removed int, more bool, err error)
	// ExpireHolds removes up to batch expirable steps (Step.Expirable:
	// held for approval, never sent) last updated before cutoff, oldest
	// first, and records an EventExpired for each; more reports that
	// another call may find more. A step approved or changed meanwhile is
	// left alone. Replicas may call it at the same time.
	ExpireHolds(cutoff time.Time, batch int) (expired int, more bool, err error)
	// GetWorkflow, ListWorkflows and WorkflowSteps read workflows; a
	// workflow is identified by its scope (the caller's credential MAC)
	// and id. FindWorkflows returns every scope's record of an id.
	GetWorkflow(scope, id string) (Workflow, error)
	FindWorkflows(id string) ([]Workflow, error)
	ListWorkflows(limit int) ([]Workflow, error)
	WorkflowSteps(scope, id string) ([]Step, error)
	// PutCheckpoint stores a checkpoint as a compare-and-swap on the
	// workflow's version (If-Match).
	PutCheckpoint(scope, id string, ifVersion *uint64, checkpoint json.RawMessage) (Workflow, error)
	// Renew extends the lease of a step the caller still owns by its
	// claim: started, or committed with a pending verification
	// (Step.Leasable); an error wrapping ErrFenced otherwise.
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
	// Path names where the journal lives, for logs and messages: the
	// bbolt file, or the PostgreSQL database without its credentials.
	Path() string
	Close() error
}

// Maintainer is the optional part of a journal that lives in one file:
// a consistent copy for backups, and the file's size. Only the bbolt
// backend has it, and whoever opens the journal passes it on explicitly
// (proxy.Options.Maintainer, admin.Options.Maintainer), or nil: the
// admin API then answers a backup request with "not supported by this
// journal backend", and no size gauge is exported.
type Maintainer interface {
	// WriteTo writes a consistent copy of the journal file.
	WriteTo(w io.Writer) (int64, error)
	// Size is the journal file's size in bytes.
	Size() int64
}
