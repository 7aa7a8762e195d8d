package proxy

import "errors"

// Errors the pipeline branches on. Each maps to one answer (see
// problem.go); none is returned to callers outside the package.
var (
	// errNoJournal: New was called without a journal.
	errNoJournal = errors.New("new proxy: no journal")
)
