package admin

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Regression: resolve took {"outcome":"not_executed","outcome":"committed"}
// and the last value won. Every admin body with a duplicate member, at any
// depth, is now refused with a 400 problem, and nothing changes.
func TestAdminBodiesRefuseDuplicateMembers(t *testing.T) {
	j := openJournal(t)
	admin := New(Options{Journal: j, Proxy: testProxy{}, InsecureNoAuth: true})
	tests := []struct{ name, method, path, body string }{
		{name: "resolve outcome", method: "POST", path: "/v1/steps/k/resolve", body: `{"outcome":"not_executed","outcome":"committed"}`},
		{name: "resolve note", method: "POST", path: "/v1/steps/k/resolve", body: `{"outcome":"committed","note":"a","note":"b"}`},
		{name: "approve note", method: "POST", path: "/v1/steps/k/approve", body: `{"note":"a","note":"b"}`},
		{name: "checkpoint goal", method: "PUT", path: "/v1/workflows/wf/checkpoint", body: `{"goal":"a","goal":"b"}`},
		{name: "checkpoint nested", method: "PUT", path: "/v1/workflows/wf/checkpoint", body: `{"goal":"a","artifacts":[{"id":"x","id":"y"}]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
			rec := httptest.NewRecorder()
			admin.ServeHTTP(rec, req)
			if rec.Code != http.StatusBadRequest || rec.Header().Get("Content-Type") != "application/problem+json" {
				t.Errorf("status %d %s, want a 400 problem: %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
			}
			if !strings.Contains(rec.Body.String(), "duplicate") {
				t.Errorf("the problem does not name the duplicate: %s", rec.Body)
			}
		})
	}
	if _, err := j.GetWorkflow("", "wf"); err == nil {
		t.Error("a checkpoint with a duplicate member was stored")
	}
}
