package journal

import (
	"errors"
	"fmt"
)

// Errors returned by the journal, grouped by operation. Classify them with
// errors.Is; they are wrapped as "verb object: %w" with the path or key.

// Apply.
var (
	// ErrNoChange is returned by a Mutation that has nothing to write. Apply
	// then returns the current record and a nil error (or ErrNotFound when
	// there is none).
	ErrNoChange = errors.New("no change")
	// ErrFenced means the step was claimed by another owner since the
	// caller's claim, or no longer exists: the caller's write is stale and
	// was not applied. See Fenced and FencedError.
	ErrFenced = errors.New("fenced: step claimed by another owner")
	// ErrInvalidChange means a Mutation returned a Change that cannot be
	// stored (wrong or oversized key, unknown status or hold, a committed
	// step without Response or Evidence, an oversized workflow id).
	ErrInvalidChange = errors.New("invalid change")
	// ErrReadOnly means the journal was opened read-only (the backend's
	// Options.ReadOnly).
	ErrReadOnly = errors.New("journal is read-only")
	// ErrTransition means a Change asks for a move between states that the
	// allowlist (Allowed) refuses; nothing was written.
	ErrTransition = errors.New("transition not allowed")
	// ErrCommitUnknown means a commit's acknowledgement was lost (the
	// connection broke after the commit was sent): the change may or may
	// not be stored. The caller must read the step again before deciding
	// anything, and must never send on the strength of that claim.
	ErrCommitUnknown = errors.New("journal commit outcome unknown")
	// ErrOverBudget means a change that creates a step was refused by its
	// Change.Budget: the caller's budget for the route is spent within its
	// window. Nothing was written.
	ErrOverBudget = errors.New("over budget")
	// ErrTooManyHolds means a change that creates a held step was refused
	// by its Change.MaxHolds: the caller has that many held steps already.
	// Nothing was written.
	ErrTooManyHolds = errors.New("too many open holds")
)

// Checkpoints (PutCheckpoint).
var (
	// ErrVersionMismatch means the caller named a workflow version that is
	// no longer current; see VersionError.
	ErrVersionMismatch = errors.New("workflow version mismatch")
	// ErrPreconditionRequired means the workflow has a checkpoint and the
	// caller named no version to replace.
	ErrPreconditionRequired = errors.New("workflow has a checkpoint: name the version you read")
)

// Reads.
var (
	// ErrNotFound means the journal has no step (or workflow) with that key.
	ErrNotFound = errors.New("not found")
)

// Any operation.
var (
	// ErrUnavailable means the store cannot be reached or cannot write (a
	// full disk, a database that is down). Nothing was written; retry later.
	ErrUnavailable = errors.New("journal unavailable")
	// ErrClosed means the journal was closed.
	ErrClosed = errors.New("journal is closed")
	// ErrCorrupt means a record or bucket the journal needs is missing or
	// cannot be decoded; Check tells more.
	ErrCorrupt = errors.New("journal is corrupt")
)

// FencedError is the error a Fenced mutation returns; it wraps ErrFenced.
type FencedError struct {
	// Key is the step's key; Apply fills it in.
	Key string
	// HeldEpoch and HeldFence are the claim of the rejected writer.
	HeldEpoch, HeldFence uint64
	// Epoch and Fence are the claim on the current record; both are zero
	// when the step no longer exists (Missing).
	Epoch, Fence uint64
	Missing      bool
}

func (e *FencedError) Error() string {
	if e.Missing {
		return fmt.Sprintf("step %s: %v: held epoch %d fence %d, step no longer exists",
			e.Key, ErrFenced, e.HeldEpoch, e.HeldFence)
	}
	return fmt.Sprintf("step %s: %v: held epoch %d fence %d, current epoch %d fence %d",
		e.Key, ErrFenced, e.HeldEpoch, e.HeldFence, e.Epoch, e.Fence)
}

// Unwrap makes errors.Is(err, ErrFenced) true.
func (e *FencedError) Unwrap() error { return ErrFenced }
