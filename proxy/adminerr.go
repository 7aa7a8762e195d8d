package proxy

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/toolguard/toolguard/journal"
)

// requestError marks an error as the caller's mistake (400 bad-request);
// its text is the problem's detail.
type requestError struct{ err error }

func (e requestError) Error() string { return e.err.Error() }
func (e requestError) Unwrap() error { return e.err }

// badRequest marks err as the caller's mistake.
func badRequest(err error) error { return requestError{err} }

// adminProblemFor classifies an admin API error into its problem (see the
// admin rows of problemInfo). The detail of a 4xx is the error's text,
// which is written for the caller; a 500 gets a generic detail, and
// internal is true: the error itself is for the log only.
func adminProblemFor(err error) (p *Problem, internal bool) {
	var re requestError
	var ve *journal.VersionError
	switch {
	case errors.Is(err, errUnauthorized):
		return newProblem(ProblemAdminUnauthorized, "", err.Error()), false
	case errors.Is(err, errForbidden):
		return newProblem(ProblemAdminForbidden, "", err.Error()), false
	case errors.Is(err, errNoStep), errors.Is(err, errNoWorkflow):
		return newProblem(ProblemAdminNotFound, "", err.Error()), false
	case errors.Is(err, journal.ErrNotFound):
		return newProblem(ProblemAdminNotFound, "", "not found"), false
	case errors.Is(err, ErrNoFileBackup):
		return newProblem(ProblemAdminNotSupported, "", err.Error()), false
	case errors.Is(err, ErrAmbiguousKey):
		return newProblem(ProblemAdminAmbiguousKey, "", err.Error()), false
	case errors.Is(err, ErrAmbiguousScope):
		return newProblem(ProblemAdminAmbiguousScope, "", err.Error()), false
	case errors.Is(err, errNotHeld):
		return newProblem(ProblemAdminNotHeld, "", err.Error()), false
	case errors.Is(err, ErrStillLanding):
		return newProblem(ProblemAdminStillLanding, "", err.Error()), false
	case errors.Is(err, errCheckpointTooLarge):
		return newProblem(ProblemAdminCheckpointTooLarge, "", err.Error()), false
	case errors.Is(err, errBadCheckpoint) && errors.Is(err, errTooLarge):
		p := newProblem(ProblemAdminBadCheckpoint, "", err.Error())
		p.Status = http.StatusRequestEntityTooLarge
		return p, false
	case errors.Is(err, errBadCheckpoint):
		return newProblem(ProblemAdminBadCheckpoint, "", err.Error()), false
	case errors.As(err, &ve):
		return newProblem(ProblemAdminVersionMismatch, "", ve.Error()), false
	case errors.Is(err, journal.ErrPreconditionRequired):
		return newProblem(ProblemAdminIfMatchRequired, "", "this workflow has a checkpoint: send If-Match with the version you read"), false
	case errors.As(err, &re), errors.Is(err, journal.ErrInvalidChange):
		return newProblem(ProblemAdminBadRequest, "", err.Error()), false
	}
	return newProblem(ProblemAdminJournal, "", "the journal could not be read or written; the cause is in toolguard's log"), true
}

// adminError answers an admin API request that failed with err. It is the
// admin API's only error answer: a 500 logs err and never sends its text.
func adminError(w http.ResponseWriter, log *slog.Logger, err error) {
	p, internal := adminProblemFor(err)
	if internal {
		log.Error("admin request failed", slog.Any("error", err))
	}
	var ve *journal.VersionError
	if errors.As(err, &ve) {
		// The agent needs the current version to read again and retry.
		b, _ := json.Marshal(struct {
			*Problem
			CurrentVersion uint64 `json:"current_version"`
		}{p, ve.Current})
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(p.Status)
		w.Write(append(b, '\n'))
		return
	}
	p.write(w)
}
