package admin

import "errors"

// Errors of the admin API. Each maps to one problem answer (problemFor in
// problem.go); the exported ones are also returned to callers of FindStep,
// PickWorkflow and the mutations, who classify them with errors.Is.

// Authentication.
var (
	// errUnauthorized and errForbidden: a missing or wrong bearer token
	// (401), or one whose role may not do that (403).
	errUnauthorized = errors.New("a valid bearer token is required")
	errForbidden    = errors.New("this token may not do that: approvals and resolutions need the operator token")
	// errBadScope: an agent's scope that names no api, or a credential
	// header the api does not list (400).
	errBadScope = errors.New("agent scope")
)

// Steps and workflows looked up.
var (
	// errNoStep and errNoWorkflow: a request names a key or a workflow id
	// the journal does not have (404).
	errNoStep     = errors.New("no step has that key")
	errNoWorkflow = errors.New("no workflow has that id")
	// ErrAmbiguousKey means a key prefix starts more than one step's key;
	// see AmbiguousKeyError (409).
	ErrAmbiguousKey = errors.New("ambiguous key prefix")
	// ErrAmbiguousScope means a workflow id (or a ?scope= prefix) matches
	// the records of more than one caller scope; see AmbiguousScopeError
	// (409).
	ErrAmbiguousScope = errors.New("ambiguous workflow scope")
)

// Operator decisions.
var (
	// errNotHeld: approve or resolve of a step that is not held (409).
	errNotHeld = errors.New("step is not held")
	// ErrStillLanding refuses to resolve a step as not executed while its
	// last attempt may still land at the provider: its owner's lease had
	// not ended long enough ago for the longest send it allowed. Waiting
	// until the time it names, or forcing, is the operator's choice (409).
	ErrStillLanding = errors.New("an interrupted attempt of this call may still land at the provider")
)

// Checkpoints.
var (
	// errBadCheckpoint: a checkpoint body that is not the documented shape
	// (400; 413 when it also wraps errTooLarge).
	errBadCheckpoint = errors.New("bad checkpoint")
	// errTooLarge: a checkpoint over its size limits (413).
	errTooLarge = errors.New("checkpoint too large")
	// errCheckpointTooLarge: a checkpoint body over maxCheckpointBytes (413).
	errCheckpointTooLarge = errors.New("checkpoint body too large")
)

// Maintenance.
var (
	// ErrNoFileBackup is the answer to a backup request when the journal
	// backend keeps no file (no Maintainer) (501).
	ErrNoFileBackup = errors.New("this journal backend has no file to back up: back up its database with the database's own tools (pg_dump), see docs/operations.md")
)
