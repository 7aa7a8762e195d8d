package admin

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/journal/bolt"
)

// Backups need the optional Maintainer: without one (a journal backend
// with no file) the endpoint says so, while check and export, which every
// journal.Store provides, keep working.
func TestMaintenanceWithoutMaintainer(t *testing.T) {
	j, err := bolt.Open(filepath.Join(t.TempDir(), "tg.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	tests := []struct {
		name   string
		mt     journal.Maintainer
		path   string
		status int
		body   string
	}{
		{name: "backup with a file", mt: j, path: "/v1/journal/backup", status: http.StatusOK},
		{name: "backup without a file", path: "/v1/journal/backup", status: http.StatusNotImplemented, body: "pg_dump"},
		{name: "check without a file", path: "/v1/journal/check", status: http.StatusOK, body: `"ok": true`},
		{name: "export without a file", path: "/v1/journal/export", status: http.StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := New(Options{Journal: j, Maintainer: tc.mt, InsecureNoAuth: true})
			rec := httptest.NewRecorder()
			a.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
			if rec.Code != tc.status || !strings.Contains(rec.Body.String(), tc.body) {
				t.Fatalf("GET %s: %d %s, want %d containing %q", tc.path, rec.Code, rec.Body.String(), tc.status, tc.body)
			}
		})
	}
}
