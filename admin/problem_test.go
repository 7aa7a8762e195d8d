package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"

	"github.com/toolguard/toolguard/journal"
)

// TestAdminErrorMapping is the admin API's one error mapping: each kind of
// error gets its problem type and status; internal errors never leak.
func TestAdminErrorMapping(t *testing.T) {
	internal := fmt.Errorf("read step: open /var/lib/toolguard/secret.db: %w", syscall.EIO)
	tests := []struct {
		name       string
		err        error
		typ        string
		status     int
		detail     string // substring of the detail
		wantLogged bool
	}{
		{name: "unauthorized", err: errUnauthorized, typ: ProblemUnauthorized, status: 401, detail: "bearer token"},
		{name: "forbidden", err: errForbidden, typ: ProblemForbidden, status: 403, detail: "operator token"},
		{name: "no step", err: notFoundAs(fmt.Errorf("get step k: %w", journal.ErrNotFound), errNoStep), typ: ProblemNotFound, status: 404, detail: "no step has that key"},
		{name: "no workflow", err: notFoundAs(journal.ErrNotFound, errNoWorkflow), typ: ProblemNotFound, status: 404, detail: "no workflow has that id"},
		{name: "not found, unnamed", err: fmt.Errorf("x: %w", journal.ErrNotFound), typ: ProblemNotFound, status: 404},
		{name: "not held", err: fmt.Errorf("%w: resolve: step k is committed", errNotHeld), typ: ProblemNotHeld, status: 409, detail: "not held"},
		{name: "bad request", err: badRequest(errors.New("limit: want a positive number")), typ: ProblemBadRequest, status: 400, detail: "limit"},
		{name: "invalid change", err: fmt.Errorf("put checkpoint: %w: workflow id too long", journal.ErrInvalidChange), typ: ProblemBadRequest, status: 400, detail: "too long"},
		{name: "bad checkpoint", err: fmt.Errorf("%w: goal missing", errBadCheckpoint), typ: ProblemBadCheckpoint, status: 400, detail: "goal missing"},
		{name: "checkpoint field too large", err: fmt.Errorf("%w: %w: plan", errBadCheckpoint, errTooLarge), typ: ProblemBadCheckpoint, status: 413},
		{name: "checkpoint body too large", err: fmt.Errorf("%w: at most 64 KiB", errCheckpointTooLarge), typ: ProblemCheckpointTooLarge, status: 413},
		{name: "version mismatch", err: fmt.Errorf("put: %w", &journal.VersionError{ID: "w", Want: 1, Current: 2}), typ: ProblemVersionMismatch, status: 412, detail: "version 2"},
		{name: "if-match required", err: journal.ErrPreconditionRequired, typ: ProblemIfMatchRequired, status: 428, detail: "If-Match"},
		{name: "internal", err: internal, typ: ProblemJournal, status: 500, detail: "toolguard's log", wantLogged: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			rec := httptest.NewRecorder()
			writeError(rec, slog.New(slog.NewTextHandler(&logs, nil)), tc.err)
			var got map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatalf("body %q: %v", rec.Body, err)
			}
			if rec.Code != tc.status || got["type"] != tc.typ || got["status"] != float64(tc.status) || got["title"] == "" {
				t.Fatalf("answer %d %v, want %d %s", rec.Code, got, tc.status, tc.typ)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
				t.Errorf("Content-Type = %q", ct)
			}
			detail, _ := got["detail"].(string)
			if !strings.Contains(detail, tc.detail) {
				t.Errorf("detail %q, want it to contain %q", detail, tc.detail)
			}
			if strings.Contains(rec.Body.String(), "secret.db") {
				t.Errorf("internal error text leaked: %s", rec.Body)
			}
			if logged := strings.Contains(logs.String(), "secret.db"); logged != tc.wantLogged {
				t.Errorf("logged = %v, want %v:\n%s", logged, tc.wantLogged, logs.String())
			}
			if tc.typ == ProblemVersionMismatch && got["current_version"] != float64(2) {
				t.Errorf("current_version = %v, want 2", got["current_version"])
			}
		})
	}
}

// The admin endpoints answer through writeError: a sample of them, over
// HTTP, against the real journal.
func TestAdminErrorsOverHTTP(t *testing.T) {
	j := openJournal(t)
	key := strings.Repeat("c", 64)
	st := journal.Step{Key: key, API: "billing", Route: "create_invoice", Status: journal.StatusStarted}
	putStep(t, j, st) // a call sent, then answered
	st.Status, st.Response, st.Evidence = journal.StatusCommitted, &journal.Response{Status: 201}, "upstream answered 201 Created"
	putStep(t, j, st)
	srv := httptest.NewServer(New(Options{Journal: j, Proxy: testProxy{}, Token: "op"}))
	defer srv.Close()
	tests := []struct {
		method, path string
		body         any
		status       int
		typ          string
	}{
		{"GET", "/v1/steps/nope", nil, 404, ProblemNotFound},
		{"POST", "/v1/steps/nope/approve", nil, 404, ProblemNotFound},
		{"POST", "/v1/steps/" + key + "/approve", nil, 409, ProblemNotHeld},
		{"POST", "/v1/steps/" + key + "/resolve", Resolution{Outcome: "maybe"}, 400, ProblemBadRequest},
		{"POST", "/v1/steps/" + key + "/resolve", map[string]string{"bogus": "x"}, 400, ProblemBadRequest},
		{"GET", "/v1/steps?status=sideways", nil, 400, ProblemBadRequest},
		{"GET", "/v1/events?after=x", nil, 400, ProblemBadRequest},
		{"GET", "/v1/workflows/nope", nil, 404, ProblemNotFound},
		{"GET", "/v1/workflows/nope/resume", nil, 404, ProblemNotFound},
		{"PUT", "/v1/workflows/w1/checkpoint", map[string]string{"raw_output": "x"}, 400, ProblemBadCheckpoint},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			var rd io.Reader
			if tc.body != nil {
				b, _ := json.Marshal(tc.body)
				rd = bytes.NewReader(b)
			}
			req, _ := http.NewRequest(tc.method, srv.URL+tc.path, rd)
			req.Header.Set("Authorization", "Bearer op")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var got Problem
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.status || got.Type != tc.typ || got.Status != tc.status {
				t.Fatalf("answer %d %+v, want %d %s", resp.StatusCode, got, tc.status, tc.typ)
			}
		})
	}
}
