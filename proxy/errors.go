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
	// errNoStep and errNoWorkflow: an admin request names a key or a
	// workflow id the journal does not have (404).
	errNoStep     = errors.New("no step has that key")
	errNoWorkflow = errors.New("no workflow has that id")
	// errBadCheckpoint: a checkpoint body that is not the documented shape
	// (400; 413 when it also wraps errTooLarge).
	errBadCheckpoint = errors.New("bad checkpoint")
	// errCheckpointTooLarge: a checkpoint body over maxCheckpointBytes (413).
	errCheckpointTooLarge = errors.New("checkpoint body too large")
	// errUnauthorized and errForbidden: a missing or wrong bearer token
	// (401), or one whose role may not do that (403).
	errUnauthorized = errors.New("a valid bearer token is required")
	errForbidden    = errors.New("this token may not do that: approvals and resolutions need the operator token")
	// errNoJournal: New was called without a journal.
	errNoJournal = errors.New("new proxy: no journal")
)
