package proxy

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strconv"

	"github.com/toolguard/toolguard/journal"
)

// Maintainer is the part of the journal that operators' tools use.
type Maintainer interface {
	// WriteTo writes a consistent copy of the journal file.
	WriteTo(w io.Writer) (int64, error)
	// Check verifies the file and toolguard's invariants.
	Check() []error
	// ForEach walks every step in one consistent snapshot.
	ForEach(fn func(journal.Step) error) error
	Size() int64
}

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
func mountMaintenance(mux *http.ServeMux, auth func(Role, http.HandlerFunc) http.HandlerFunc, m Maintainer) {
	mux.HandleFunc("GET /v1/journal/backup", auth(RoleOperator, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", `attachment; filename="toolguard.db"`)
		w.Header().Set("X-Journal-Size", strconv.FormatInt(m.Size(), 10))
		m.WriteTo(w) // a failure mid-stream truncates the body; the CLI checks the copy
	}))
	mux.HandleFunc("GET /v1/journal/check", auth(RoleOperator, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, NewCheckReport(m.Check()))
	}))
	mux.HandleFunc("GET /v1/journal/export", auth(RoleOperator, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		bw := bufio.NewWriter(w)
		enc := json.NewEncoder(bw)
		m.ForEach(func(st journal.Step) error { return enc.Encode(ViewOf(&st)) })
		bw.Flush()
	}))
}
