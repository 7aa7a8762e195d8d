package proxy

import "errors"

// Errors the pipeline and the admin API branch on. Each maps to one answer
// (see problem.go and the admin handlers); none is returned to callers
// outside the package.
var (
	// errBodyTimeout: a guarded request body that arrived too slowly (408).
	errBodyTimeout = errors.New("request body read timed out")
	// errTooLarge: a checkpoint over its size limits (413).
	errTooLarge = errors.New("checkpoint too large")
	// errNotHeld: approve or resolve of a step that is not held (409).
	errNotHeld = errors.New("step is not held")
	// errNoJournal: New was called without a journal.
	errNoJournal = errors.New("new proxy: no journal")
)
