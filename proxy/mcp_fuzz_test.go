package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolguard/toolguard/journal/bolt"
	"github.com/toolguard/toolguard/mcp"
	"github.com/toolguard/toolguard/rules"
)

// FuzzMCPGateway posts arbitrary bodies to the gateway endpoint: it never
// panics, and a body that is not a valid JSON-RPC message neither reaches
// the server nor leaves a step in the journal.
func FuzzMCPGateway(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_ticket","arguments":{"project":"a","title":"b"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}},{"jsonrpc":"2.0","method":"n"}]`,
		`{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`{"jsonrpc":"2.0","id":"x","method":"tools/list"}`,
	} {
		f.Add([]byte(seed))
	}
	var sent atomic.Int64
	upstream := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		sent.Add(1)
		io.Copy(io.Discard, r.Body)
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"no"}}`)), Request: r}, nil
	})
	j, err := bolt.Open(filepath.Join(f.TempDir(), "tg.db"), bolt.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { j.Close() })
	api, err := rules.Parse("t.yaml", []byte("api: tickets\nmcp: {}\ntools:\n  - name: create_ticket\n    effect: irreversible\n"))
	if err != nil {
		f.Fatal(err)
	}
	up := serveSim(f, upstream)
	u, _ := url.Parse(up.at("http://tickets.test/mcp"))
	srv, err := New(up.options(Options{Journal: j, Secret: []byte("s"), MCPServers: []MCPServer{{Name: "tickets", URL: u, API: api}}}))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(srv.Close)
	f.Fuzz(func(t *testing.T, body []byte) {
		before, _ := j.Count()
		sentBefore := sent.Load()
		req := httptest.NewRequest(http.MethodPost, "/mcp/tickets", strings.NewReader(string(body)))
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		if _, err := mcp.Parse(body); err == nil {
			return
		}
		after, _ := j.Count()
		if after.Steps != before.Steps || sent.Load() != sentBefore {
			t.Fatalf("invalid body %q: steps %d → %d, sent %d → %d", body, before.Steps, after.Steps, sentBefore, sent.Load())
		}
		if rec.Code != http.StatusBadRequest && rec.Code != http.StatusRequestEntityTooLarge {
			t.Fatalf("invalid body %q answered %d", body, rec.Code)
		}
	})
}
