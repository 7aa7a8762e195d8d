package admin

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
)

// FuzzAdminJSON sends arbitrary bodies to the admin API's JSON inputs
// (checkpoints, resolutions, approvals): it must never panic, never answer
// 500, and never accept what does not validate. Seeds:
// testdata/fuzz/FuzzAdminJSON.
func FuzzAdminJSON(f *testing.F) {
	j := openJournal(f)
	admin := New(Options{Journal: j, Maintainer: j, Proxy: testProxy{}, InsecureNoAuth: true})
	targets := []struct{ method, path string }{
		{"PUT", "/v1/workflows/wf-fuzz/checkpoint"},
		{"POST", "/v1/steps/k/resolve"},
		{"POST", "/v1/steps/k/approve"},
	}
	f.Fuzz(func(t *testing.T, which uint8, ifMatch string, body []byte) {
		tg := targets[int(which)%len(targets)]
		req := httptest.NewRequest(tg.method, tg.path, bytes.NewReader(body))
		if ifMatch != "" {
			req.Header.Set("If-Match", ifMatch)
		}
		rec := httptest.NewRecorder()
		admin.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusOK, http.StatusBadRequest, http.StatusNotFound, http.StatusConflict,
			http.StatusPreconditionFailed, http.StatusPreconditionRequired, http.StatusRequestEntityTooLarge:
		default:
			t.Fatalf("%s %s %q: %d %s", tg.method, tg.path, body, rec.Code, rec.Body)
		}
	})
}
