package proxy

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/mcp"
	"github.com/toolguard/toolguard/problem"
)

// Regression: a plain JSON answer (application/json, not SSE) carrying
// another request's id was stored as this call's result, and replayed to
// every retry. An answer that is not the response to the request's id is
// no outcome of the call: the call's outcome is unknown, nothing is
// stored, and a retry is not answered with it.
func TestMCPAnswerWithAnotherID(t *testing.T) {
	const foreign = `{"content":[{"type":"text","text":"another caller's ticket T-99"}]}`
	tests := []struct {
		name, contentType, body string
	}{
		{name: "JSON, another number", contentType: "application/json", body: `{"jsonrpc":"2.0","id":999,"result":` + foreign + `}`},
		{name: "JSON, the id as a string", contentType: "application/json", body: `{"jsonrpc":"2.0","id":"7","result":` + foreign + `}`},
		{name: "JSON, no id", contentType: "application/json; charset=utf-8", body: `{"jsonrpc":"2.0","result":` + foreign + `}`},
		{name: "JSON, a request of the server", contentType: "application/json", body: `{"jsonrpc":"2.0","id":7,"method":"ping"}`},
		{name: "SSE, another number", contentType: "text/event-stream", body: "data: {\"jsonrpc\":\"2.0\",\"id\":999,\"result\":" + foreign + "}\n\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var effects atomic.Int64
			fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				if !bytes.Contains(body, []byte(`"tools/call"`)) {
					http.Error(w, "only tools/call", http.StatusBadRequest)
					return
				}
				effects.Add(1)
				w.Header().Set("Content-Type", tc.contentType)
				io.WriteString(w, tc.body)
			}))
			t.Cleanup(fake.Close)
			u, _ := url.Parse(fake.URL + "/mcp")
			p := newMCPProxy(t, &ticketServer{url: u}, Options{})
			for i, want := range []string{problem.OutcomeUnknown, problem.AmbiguousEffect} {
				got := gatewayCall(t, p, `7`)
				if strings.Contains(got, "T-99") {
					t.Fatalf("call %d answered with another request's result: %s", i+1, got)
				}
				if !strings.Contains(got, want) {
					t.Errorf("call %d answer = %s, want a hold of type %s", i+1, got, want)
				}
			}
			if n := effects.Load(); n != 1 {
				t.Errorf("tools/call sent %d times, want 1", n)
			}
			sts := p.steps(t)
			if len(sts) != 1 || sts[0].Response != nil || sts[0].Status == journal.StatusCommitted {
				t.Errorf("steps = %+v, want one step with no stored response", sts)
			}
		})
	}
}

// gatewayCall sends a slow_ticket tools/call (irreversible, no lookup)
// with id to the proxy's gateway endpoint, and returns the answer: the
// JSON-RPC response with that id, sent as JSON or in an SSE stream.
func gatewayCall(t *testing.T, p *mcpProxy, id string) string {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"slow_ticket","arguments":{"project":"ops","title":"Mine"}}}`
	req, _ := http.NewRequest(http.MethodPost, p.proxy.String()+"/mcp/tickets", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer alice")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := mcp.ReadResponse(resp.Header.Get("Content-Type"), resp.Body, []byte(id), 1<<20)
	if resp.StatusCode != http.StatusOK || err != nil {
		t.Fatalf("answer %d %s (%v), want a JSON-RPC response with id %s", resp.StatusCode, data, err, id)
	}
	return string(data)
}
