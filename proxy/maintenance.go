package proxy

import (
	"bufio"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/toolguard/toolguard/journal"
)

// ErrNoFileBackup is the answer to a backup request when the journal
// backend keeps no file (no Maintainer).
var ErrNoFileBackup = errors.New("this journal backend has no file to back up: back up its database with the database's own tools (pg_dump), see docs/operations.md")

// CheckReport is the answer of GET /v1/journal/check.
type CheckReport struct {
	OK       bool     `json:"ok"`
	Problems []string `json:"problems"`
}

// NewCheckReport renders Check's findings.
func NewCheckReport(errs []error) CheckReport {
	r := CheckReport{OK: len(errs) == 0, Problems: []string{}}
	for _, e := range errs {
		r.Problems = append(r.Problems, e.Error())
	}
	return r
}

// mountMaintenance adds backup, check and export to the admin API; all
// three need the operator token (a backup holds every stored response).
// Backups need the optional Maintainer; without one (a database backend)
// the endpoint answers 501 and names the database's own tools.
func mountMaintenance(mux *http.ServeMux, auth func(Role, http.HandlerFunc) http.HandlerFunc, log *slog.Logger, st journal.Store, m journal.Maintainer) {
	mux.HandleFunc("GET /v1/journal/backup", auth(RoleOperator, func(w http.ResponseWriter, r *http.Request) {
		if m == nil {
			adminError(w, log, ErrNoFileBackup)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", `attachment; filename="toolguard.db"`)
		w.Header().Set("X-Journal-Size", strconv.FormatInt(m.Size(), 10))
		m.WriteTo(w) // a failure mid-stream truncates the body; the CLI checks the copy
	}))
	mux.HandleFunc("GET /v1/journal/check", auth(RoleOperator, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, NewCheckReport(st.Check()))
	}))
	mux.HandleFunc("GET /v1/journal/export", auth(RoleOperator, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		bw := bufio.NewWriter(w)
		enc := json.NewEncoder(bw)
		st.ForEach(func(s journal.Step) error { return enc.Encode(ViewOf(&s)) })
		bw.Flush()
	}))
}
