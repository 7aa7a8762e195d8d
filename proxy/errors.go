package proxy

import "errors"

// Errors the pipeline and the admin API branch on. Each maps to one answer
// (see problem.go and the admin handlers); none is returned to callers
// outside the package.
var (
	// errBodyTooLarge: a guarded request body over limits.max_body (413).
	errBodyTooLarge = errors.New("body too large")
	// errTooLarge: a checkpoint over its size limits (413).
	errTooLarge = errors.New("checkpoint too large")
	// errNotHeld: approve or resolve of a step that is not held (409).
	errNotHeld = errors.New("step is not held")
	// errNoJournal: New was called without a journal.
	errNoJournal = errors.New("new proxy: no journal")
)
