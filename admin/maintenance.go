package admin

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/toolguard/toolguard/journal"
)

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
func (a *API) mountMaintenance() {
	j, m := a.opts.Journal, a.opts.Maintainer
	a.mux.HandleFunc("GET /v1/journal/backup", a.auth(RoleOperator, func(w http.ResponseWriter, r *http.Request) {
		if m == nil {
			a.fail(w, ErrNoFileBackup)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", `attachment; filename="toolguard.db"`)
		w.Header().Set("X-Journal-Size", strconv.FormatInt(m.Size(), 10))
		m.WriteTo(w) // a failure mid-stream truncates the body; the CLI checks the copy
	}))
	a.mux.HandleFunc("GET /v1/journal/check", a.auth(RoleOperator, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, NewCheckReport(j.Check()))
	}))
	a.mux.HandleFunc("GET /v1/journal/export", a.auth(RoleOperator, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		bw := bufio.NewWriter(w)
		enc := json.NewEncoder(bw)
		j.ForEach(func(s journal.Step) error { return enc.Encode(ViewOf(&s)) })
		bw.Flush()
	}))
}
