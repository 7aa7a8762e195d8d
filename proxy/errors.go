package proxy

import "errors"

// Errors the pipeline branches on. Each maps to one answer (see
// problem.go); none is returned to callers outside the package.
var (
	// errBodyTimeout: a guarded request body that arrived too slowly (408).
	errBodyTimeout = errors.New("request body read timed out")
	// errNoJournal: New was called without a journal.
	errNoJournal = errors.New("new proxy: no journal")
)
