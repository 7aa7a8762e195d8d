package admin

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/toolguard/toolguard/journal"
)

// Problem types of the admin API.
const (
	ProblemBadRequest         = "urn:toolguard:admin:bad-request"
	ProblemUnauthorized       = "urn:toolguard:admin:unauthorized"
	ProblemForbidden          = "urn:toolguard:admin:forbidden"
	ProblemNotFound           = "urn:toolguard:admin:not-found"
	ProblemNotHeld            = "urn:toolguard:admin:not-held"
	ProblemStillLanding       = "urn:toolguard:admin:attempt-may-still-land"
	ProblemBadCheckpoint      = "urn:toolguard:admin:bad-checkpoint"
	ProblemCheckpointTooLarge = "urn:toolguard:admin:checkpoint-too-large"
	ProblemVersionMismatch    = "urn:toolguard:admin:version-mismatch"
	ProblemIfMatchRequired    = "urn:toolguard:admin:if-match-required"
	ProblemJournal            = "urn:toolguard:admin:journal"
	ProblemAmbiguousKey       = "urn:toolguard:admin:ambiguous-key"
	ProblemAmbiguousScope     = "urn:toolguard:admin:ambiguous-scope"
	ProblemNotSupported       = "urn:toolguard:admin:not-supported"
)

// problemStatus is each problem type's status; its title is the status
// text, as it always was.
var problemStatus = map[string]int{
	ProblemBadRequest:         http.StatusBadRequest,
	ProblemUnauthorized:       http.StatusUnauthorized,
	ProblemForbidden:          http.StatusForbidden,
	ProblemNotFound:           http.StatusNotFound,
	ProblemNotHeld:            http.StatusConflict,
	ProblemStillLanding:       http.StatusConflict,
	ProblemBadCheckpoint:      http.StatusBadRequest,
	ProblemCheckpointTooLarge: http.StatusRequestEntityTooLarge,
	ProblemVersionMismatch:    http.StatusPreconditionFailed,
	ProblemIfMatchRequired:    http.StatusPreconditionRequired,
	ProblemJournal:            http.StatusInternalServerError,
	ProblemAmbiguousKey:       http.StatusConflict,
	ProblemAmbiguousScope:     http.StatusConflict,
	ProblemNotSupported:       http.StatusNotImplemented,
}

// Problem is an RFC 9457 problem body, as the admin API answers a failed
// request (Content-Type: application/problem+json).
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
}

func newProblem(typ, detail string) *Problem {
	status := problemStatus[typ]
	return &Problem{Type: typ, Title: http.StatusText(status), Status: status, Detail: detail}
}

// requestError marks an error as the caller's mistake (400 bad-request);
// its text is the problem's detail.
type requestError struct{ err error }

func (e requestError) Error() string { return e.err.Error() }
func (e requestError) Unwrap() error { return e.err }

// badRequest marks err as the caller's mistake.
func badRequest(err error) error { return requestError{err} }

// notFoundAs turns the journal's "not found" into what the caller named
// (errNoStep, errNoWorkflow); other errors are returned as they are.
func notFoundAs(err, what error) error {
	if errors.Is(err, journal.ErrNotFound) {
		return what
	}
	return err
}

// problemFor classifies an admin API error into its problem. The detail of
// a 4xx is the error's text, which is written for the caller; a 500 gets a
// generic detail, and internal is true: the error itself is for the log
// only.
func problemFor(err error) (p *Problem, internal bool) {
	var re requestError
	var ve *journal.VersionError
	switch {
	case errors.Is(err, errUnauthorized):
		return newProblem(ProblemUnauthorized, err.Error()), false
	case errors.Is(err, errForbidden):
		return newProblem(ProblemForbidden, err.Error()), false
	case errors.Is(err, errNoStep), errors.Is(err, errNoWorkflow):
		return newProblem(ProblemNotFound, err.Error()), false
	case errors.Is(err, journal.ErrNotFound):
		return newProblem(ProblemNotFound, "not found"), false
	case errors.Is(err, ErrNoFileBackup):
		return newProblem(ProblemNotSupported, err.Error()), false
	case errors.Is(err, ErrAmbiguousKey):
		return newProblem(ProblemAmbiguousKey, err.Error()), false
	case errors.Is(err, ErrAmbiguousScope):
		return newProblem(ProblemAmbiguousScope, err.Error()), false
	case errors.Is(err, errNotHeld):
		return newProblem(ProblemNotHeld, err.Error()), false
	case errors.Is(err, ErrStillLanding):
		return newProblem(ProblemStillLanding, err.Error()), false
	case errors.Is(err, errCheckpointTooLarge):
		return newProblem(ProblemCheckpointTooLarge, err.Error()), false
	case errors.Is(err, errBadCheckpoint) && errors.Is(err, errTooLarge):
		p := newProblem(ProblemBadCheckpoint, err.Error())
		p.Status = http.StatusRequestEntityTooLarge
		return p, false
	case errors.Is(err, errBadCheckpoint):
		return newProblem(ProblemBadCheckpoint, err.Error()), false
	case errors.As(err, &ve):
		return newProblem(ProblemVersionMismatch, ve.Error()), false
	case errors.Is(err, journal.ErrPreconditionRequired):
		return newProblem(ProblemIfMatchRequired, "this workflow has a checkpoint: send If-Match with the version you read"), false
	case errors.As(err, &re), errors.Is(err, journal.ErrInvalidChange):
		return newProblem(ProblemBadRequest, err.Error()), false
	}
	return newProblem(ProblemJournal, "the journal could not be read or written; the cause is in toolguard's log"), true
}

// writeError answers an admin API request that failed with err. It is the
// admin API's only error answer: a 500 logs err and never sends its text.
func writeError(w http.ResponseWriter, log *slog.Logger, err error) {
	p, internal := problemFor(err)
	if internal {
		log.Error("admin request failed", slog.Any("error", err))
	}
	var body any = p
	var ve *journal.VersionError
	if errors.As(err, &ve) {
		// The agent needs the current version to read again and retry.
		body = struct {
			*Problem
			CurrentVersion uint64 `json:"current_version"`
		}{p, ve.Current}
	}
	b, _ := json.Marshal(body) // plain strings and ints cannot fail
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(p.Status)
	w.Write(append(b, '\n'))
}

// fail answers a failed request (see writeError).
func (a *API) fail(w http.ResponseWriter, err error) { writeError(w, a.log, err) }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}
