package console

import (
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHandler(t *testing.T) {
	h := Handler(Options{Version: "v1.2.3"})
	tests := []struct {
		name, method, path string
		wantStatus         int
		wantType, wantBody string
	}{
		{name: "shell", method: "GET", path: "/ui/", wantStatus: 200, wantType: "text/html; charset=utf-8", wantBody: `<script src="/ui/static/app.js" defer></script>`},
		{name: "script", method: "GET", path: "/ui/static/app.js", wantStatus: 200, wantType: "text/javascript; charset=utf-8", wantBody: "textContent"},
		{name: "style", method: "GET", path: "/ui/static/app.css", wantStatus: 200, wantType: "text/css; charset=utf-8"},
		{name: "svg icon", method: "GET", path: "/ui/static/favicon.svg", wantStatus: 200, wantType: "image/svg+xml", wantBody: "<svg"},
		{name: "root favicon", method: "GET", path: "/favicon.ico", wantStatus: 200, wantType: "image/x-icon", wantBody: "\x00\x00\x01\x00"},
		{name: "static favicon", method: "GET", path: "/ui/static/favicon.ico", wantStatus: 200, wantType: "image/x-icon"},
		{name: "shell links the icon", method: "GET", path: "/ui/", wantStatus: 200, wantBody: `<link rel="icon" href="/ui/static/favicon.svg"`},
		{name: "unknown page", method: "GET", path: "/ui/nope", wantStatus: 404},
		{name: "post", method: "POST", path: "/ui/", wantStatus: 405},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
			if rec.Code != tc.wantStatus {
				t.Fatalf("status = %d, want %d", rec.Code, tc.wantStatus)
			}
			if got := rec.Header().Get("Content-Security-Policy"); got != csp {
				t.Errorf("Content-Security-Policy = %q", got)
			}
			if got := rec.Header().Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options = %q", got)
			}
			if tc.wantType != "" && rec.Header().Get("Content-Type") != tc.wantType {
				t.Errorf("Content-Type = %q, want %q", rec.Header().Get("Content-Type"), tc.wantType)
			}
			if !strings.Contains(rec.Body.String(), tc.wantBody) {
				t.Errorf("body lacks %q", tc.wantBody)
			}
		})
	}
}

// The console builds pages with DOM calls only: no innerHTML, no inline
// handlers, no eval, and the shell has no inline script for the CSP to
// refuse.
func TestNoUnsafeSinks(t *testing.T) {
	js, _ := files.ReadFile("web/static/app.js")
	for _, sink := range []string{".innerHTML", ".outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"} {
		if strings.Contains(string(js), sink) {
			t.Errorf("app.js uses %s", sink)
		}
	}
	html, _ := files.ReadFile("web/index.html")
	if strings.Count(string(html), "<script") != 1 || strings.Contains(string(html), "onclick") || strings.Contains(string(html), "onload") {
		t.Errorf("index.html must load exactly one external script and no inline handlers")
	}
}
