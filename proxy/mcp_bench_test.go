package proxy

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/toolguard/toolguard/journal/bolt"
	"github.com/toolguard/toolguard/rules"
)

// BenchmarkMCPGuarded measures the proxy's own cost of a guarded
// tools/call through the gateway (a loopback server answers at once):
// parse, key, two journal commits, the server's answer classified and
// stored, the answer rendered.
func BenchmarkMCPGuarded(b *testing.B) {
	upstream := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		body, _ := io.ReadAll(r.Body)
		id := gjson.GetBytes(body, "id").Raw // the answer is taken only for the request's id
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
			Body:    io.NopCloser(strings.NewReader(`{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"{\"id\":\"T-1\"}"}],"structuredContent":{"id":"T-1"}}}`)),
			Request: r}, nil
	})
	j, err := bolt.Open(filepath.Join(b.TempDir(), "tg.db"), bolt.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	api, err := rules.Parse("t.yaml", []byte("api: tickets\nmcp: {}\ntools:\n  - name: create_ticket\n    effect: irreversible\n    operation_id: result:structuredContent.id\n"))
	if err != nil {
		b.Fatal(err)
	}
	up := serveSim(b, upstream)
	u, _ := url.Parse(up.at("http://tickets.test/mcp"))
	srv, err := New(up.options(Options{Journal: j, Secret: []byte("s"), MCPServers: []MCPServer{{Name: "tickets", URL: u, API: api}}}))
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	h := srv.Handler()
	var n atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"create_ticket","arguments":{"project":"p","title":"t-%d"}}}`, i, i)
			req := httptest.NewRequest(http.MethodPost, "/mcp/tickets", strings.NewReader(body))
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer agent")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != 200 || rec.Header().Get(HeaderOutcome) != OutcomeForwarded {
				b.Fatalf("answer %d %s: %s", rec.Code, rec.Header().Get(HeaderOutcome), rec.Body)
			}
		}
	})
}
