package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
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
		{name: "unauthorized", err: errUnauthorized, typ: ProblemAdminUnauthorized, status: 401, detail: "bearer token"},
		{name: "forbidden", err: errForbidden, typ: ProblemAdminForbidden, status: 403, detail: "operator token"},
		{name: "no step", err: notFoundAs(fmt.Errorf("get step k: %w", journal.ErrNotFound), errNoStep), typ: ProblemAdminNotFound, status: 404, detail: "no step has that key"},
		{name: "no workflow", err: notFoundAs(journal.ErrNotFound, errNoWorkflow), typ: ProblemAdminNotFound, status: 404, detail: "no workflow has that id"},
		{name: "not found, unnamed", err: fmt.Errorf("x: %w", journal.ErrNotFound), typ: ProblemAdminNotFound, status: 404},
		{name: "not held", err: fmt.Errorf("%w: resolve: step k is committed", errNotHeld), typ: ProblemAdminNotHeld, status: 409, detail: "not held"},
		{name: "bad request", err: badRequest(errors.New("limit: want a positive number")), typ: ProblemAdminBadRequest, status: 400, detail: "limit"},
		{name: "invalid change", err: fmt.Errorf("put checkpoint: %w: workflow id too long", journal.ErrInvalidChange), typ: ProblemAdminBadRequest, status: 400, detail: "too long"},
		{name: "bad checkpoint", err: fmt.Errorf("%w: goal missing", errBadCheckpoint), typ: ProblemAdminBadCheckpoint, status: 400, detail: "goal missing"},
		{name: "checkpoint field too large", err: fmt.Errorf("%w: %w: plan", errBadCheckpoint, errTooLarge), typ: ProblemAdminBadCheckpoint, status: 413},
		{name: "checkpoint body too large", err: fmt.Errorf("%w: at most 64 KiB", errCheckpointTooLarge), typ: ProblemAdminCheckpointTooLarge, status: 413},
		{name: "version mismatch", err: fmt.Errorf("put: %w", &journal.VersionError{ID: "w", Want: 1, Current: 2}), typ: ProblemAdminVersionMismatch, status: 412, detail: "version 2"},
		{name: "if-match required", err: journal.ErrPreconditionRequired, typ: ProblemAdminIfMatchRequired, status: 428, detail: "If-Match"},
		{name: "internal", err: internal, typ: ProblemAdminJournal, status: 500, detail: "toolguard's log", wantLogged: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			rec := httptest.NewRecorder()
			adminError(rec, slog.New(slog.NewTextHandler(&logs, nil)), tc.err)
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
			if tc.typ == ProblemAdminVersionMismatch && got["current_version"] != float64(2) {
				t.Errorf("current_version = %v, want 2", got["current_version"])
			}
		})
	}
}

// The admin endpoints answer through adminError: a sample of them, over
// HTTP, against the real journal.
func TestAdminErrorsOverHTTP(t *testing.T) {
	h := startHarness(t, harnessConfig{Routes: invoiceRoute})
	r, _ := h.post("/v1/invoices", `{"customer":"c1"}`)
	key := r.Header.Get(HeaderKey)
	tests := []struct {
		method, path string
		body         any
		status       int
		typ          string
	}{
		{"GET", "/v1/steps/nope", nil, 404, ProblemAdminNotFound},
		{"POST", "/v1/steps/nope/approve", nil, 404, ProblemAdminNotFound},
		{"POST", "/v1/steps/" + key + "/approve", nil, 409, ProblemAdminNotHeld},
		{"POST", "/v1/steps/" + key + "/resolve", Resolution{Outcome: "maybe"}, 400, ProblemAdminBadRequest},
		{"POST", "/v1/steps/" + key + "/resolve", map[string]string{"bogus": "x"}, 400, ProblemAdminBadRequest},
		{"GET", "/v1/steps?status=sideways", nil, 400, ProblemAdminBadRequest},
		{"GET", "/v1/events?after=x", nil, 400, ProblemAdminBadRequest},
		{"GET", "/v1/workflows/nope", nil, 404, ProblemAdminNotFound},
		{"GET", "/v1/workflows/nope/resume", nil, 404, ProblemAdminNotFound},
		{"PUT", "/v1/workflows/w1/checkpoint", map[string]string{"raw_output": "x"}, 400, ProblemAdminBadCheckpoint},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			var got Problem
			if code := h.adminCall(tc.method, tc.path, tc.body, &got); code != tc.status || got.Type != tc.typ || got.Status != tc.status {
				t.Fatalf("answer %d %+v, want %d %s", code, got, tc.status, tc.typ)
			}
		})
	}
}
