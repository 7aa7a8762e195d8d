package journal

import "errors"

// Store faults, shared by every backend.
var (
	// ErrUnavailable means the store cannot be reached or cannot write
	// (disk full, database down). Nothing was written; the caller may try
	// again later.
	ErrUnavailable = errors.New("journal unavailable")
	// ErrCommitUnknown means a write was sent but its acknowledgement was
	// lost (the connection broke after the commit was sent): it may or may
	// not have been applied. The caller must re-read the step before
	// deciding anything.
	ErrCommitUnknown = errors.New("journal commit outcome unknown")
)
