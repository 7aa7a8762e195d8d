package admin

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
)

// A not_executed resolution of a started step is refused while the
// proxy says its last attempt may still land, unless forced; committed,
// or a step whose window has passed, goes through.
func TestResolveWhileLanding(t *testing.T) {
	tests := []struct {
		name       string
		landsUntil time.Time
		body       string
		status     int
		typ        string
	}{
		{name: "not executed while landing", landsUntil: time.Now().Add(time.Hour), body: `{"outcome":"not_executed"}`,
			status: 409, typ: ProblemStillLanding},
		{name: "forced", landsUntil: time.Now().Add(time.Hour), body: `{"outcome":"not_executed","force":true}`, status: 200},
		{name: "committed while landing", landsUntil: time.Now().Add(time.Hour), body: `{"outcome":"committed"}`, status: 200},
		{name: "not executed once landed", landsUntil: time.Now().Add(-time.Second), body: `{"outcome":"not-executed"}`, status: 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := openJournal(t)
			key := strings.Repeat("d", 64)
			putHeld(t, j, key, "", "", journal.HoldNeedsReview)
			srv := httptest.NewServer(New(Options{Journal: j, Proxy: testProxy{landsUntil: tc.landsUntil}, Token: "op"}))
			defer srv.Close()
			var got map[string]any
			if code := call(t, srv.URL, "POST", "/v1/steps/"+key+"/resolve", "op", tc.body, nil, &got); code != tc.status {
				t.Fatalf("status %d, want %d: %v", code, tc.status, got)
			}
			if tc.typ != "" && (got["type"] != tc.typ || !strings.Contains(got["detail"].(string), "resolve with force")) {
				t.Fatalf("answer %v, want %s naming force", got, tc.typ)
			}
			if st, _ := j.Get(key); st.Held() != (tc.status != 200) {
				t.Fatalf("held = %v after a %d answer", st.Held(), tc.status)
			}
		})
	}
}

// /readyz answers 503 while the proxy is not ready and during shutdown;
// /healthz always 200.
func TestReadyz(t *testing.T) {
	j := openJournal(t)
	tests := []struct {
		name     string
		proxy    Proxy
		shutdown bool
		ready    int
	}{
		{name: "no proxy", ready: 200},
		{name: "ready", proxy: testProxy{}, ready: 200},
		{name: "proxy not ready", proxy: testProxy{notReady: true}, ready: 503},
		{name: "shutting down", proxy: testProxy{}, shutdown: true, ready: 503},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			api := New(Options{Journal: j, Proxy: tc.proxy})
			api.SetReady(!tc.shutdown)
			srv := httptest.NewServer(api)
			defer srv.Close()
			if code := call(t, srv.URL, "GET", "/readyz", "", "", nil, nil); code != tc.ready {
				t.Errorf("readyz %d, want %d", code, tc.ready)
			}
			if code := call(t, srv.URL, "GET", "/healthz", "", "", nil, nil); code != 200 {
				t.Errorf("healthz %d, want 200", code)
			}
		})
	}
}
