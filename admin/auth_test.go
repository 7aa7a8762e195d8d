package admin

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/toolguard/toolguard/journal/bolt"
)

// TestAdminAuth: no configuration lets an unauthenticated request approve
// or resolve. Regression: with no token configured every request, an empty
// bearer included, was an operator, so an agent approved its own call.
func TestAdminAuth(t *testing.T) {
	j, err := bolt.Open(filepath.Join(t.TempDir(), "tg.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	configured := Options{Journal: j, Token: "op-secret", AgentToken: "agent-secret", Metrics: http.NotFoundHandler()}
	withUI := configured
	withUI.UI = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	tests := []struct {
		name   string
		opts   Options
		method string
		path   string
		auth   string // the Authorization header; "" sends none
		want   int
	}{
		{name: "no token configured, no bearer", opts: Options{Journal: j}, method: "POST", path: "/v1/steps/k/approve", want: 401},
		{name: "no token configured, empty bearer", opts: Options{Journal: j}, method: "POST", path: "/v1/steps/k/approve", auth: "Bearer ", want: 401},
		{name: "no token configured, resolve", opts: Options{Journal: j}, method: "POST", path: "/v1/steps/k/resolve", auth: "Bearer ", want: 401},
		{name: "no token configured, read", opts: Options{Journal: j}, method: "GET", path: "/v1/steps", want: 401},
		{name: "no bearer", opts: configured, method: "POST", path: "/v1/steps/k/approve", want: 401},
		{name: "empty bearer", opts: configured, method: "POST", path: "/v1/steps/k/approve", auth: "Bearer ", want: 401},
		{name: "basic auth", opts: configured, method: "POST", path: "/v1/steps/k/approve", auth: "Basic b3Atc2VjcmV0", want: 401},
		{name: "wrong bearer", opts: configured, method: "POST", path: "/v1/steps/k/resolve", auth: "Bearer guess", want: 401},
		{name: "agent may not approve", opts: configured, method: "POST", path: "/v1/steps/k/approve", auth: "Bearer agent-secret", want: 403},
		{name: "operator approves", opts: configured, method: "POST", path: "/v1/steps/k/approve", auth: "Bearer op-secret", want: 404},
		{name: "agent reads", opts: configured, method: "GET", path: "/v1/steps", auth: "Bearer agent-secret", want: 200},
		{name: "empty agent token is no agent", opts: Options{Journal: j, Token: "op-secret"}, method: "GET", path: "/v1/steps", auth: "Bearer ", want: 401},
		{name: "metrics need a token", opts: configured, method: "GET", path: "/metrics", want: 401},
		{name: "healthz is open", opts: configured, method: "GET", path: "/healthz", want: 200},
		{name: "readyz is open", opts: configured, method: "GET", path: "/readyz", want: 200},
		{name: "console is open", opts: withUI, method: "GET", path: "/ui/", want: 200},
		{name: "favicon is open", opts: withUI, method: "GET", path: "/favicon.ico", want: 200},
		{name: "no console, no favicon", opts: configured, method: "GET", path: "/favicon.ico", want: 404},
		{name: "insecure no auth", opts: Options{Journal: j, InsecureNoAuth: true}, method: "POST", path: "/v1/steps/k/approve", want: 404},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, tc.path, nil)
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			rec := httptest.NewRecorder()
			New(tc.opts).ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Errorf("%s %s with %q: %d %s, want %d", tc.method, tc.path, tc.auth, rec.Code, rec.Body, tc.want)
			}
		})
	}
}
