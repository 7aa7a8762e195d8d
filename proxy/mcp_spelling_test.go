package proxy

import (
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Regression: the forward proxy matched an MCP endpoint literally, so
// /%6Dcp, /mcp/ and //mcp reached a server that serves /mcp under any of
// those spellings (Go's ServeMux routes /%6Dcp to /mcp) without being
// guarded. Every spelling that means the endpoint is guarded: the same
// tools/call sent twice has one effect, and the second is answered from
// the journal, as is a third sent to the plain spelling.
func TestMCPForwardEndpointSpellings(t *testing.T) {
	spellings := []string{"/mcp", "/%6Dcp", "/%6d%63%70", "/mcp/", "//mcp", "/./mcp", "/x/../mcp", "/mcp//"}
	for _, useTLS := range []bool{false, true} {
		name := "plain HTTP"
		if useTLS {
			name = "HTTPS intercepted"
		}
		t.Run(name, func(t *testing.T) {
			for _, sp := range spellings {
				t.Run(sp, func(t *testing.T) {
					ts := startTicketServer(t, &sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true}, useTLS)
					p := newMCPProxy(t, ts, Options{})
					tr := &http.Transport{Proxy: http.ProxyURL(p.proxy), TLSClientConfig: &tls.Config{RootCAs: p.roots}}
					t.Cleanup(tr.CloseIdleConnections)
					target := ts.url.Scheme + "://" + ts.url.Host + sp
					outcomes := []string{
						postToolCall(t, tr, target, `1`),
						postToolCall(t, tr, target, `"again"`),
						postToolCall(t, tr, ts.url.String(), `3`), // the plain spelling is the same endpoint
					}
					if want := []string{OutcomeForwarded, OutcomeReplayed, OutcomeReplayed}; !slices.Equal(outcomes, want) {
						t.Errorf("outcomes = %q, want %q", outcomes, want)
					}
					if n := ts.created.Load(); n != 1 {
						t.Errorf("effects = %d, want 1", n)
					}
					if sts := p.steps(t); len(sts) != 1 || sts[0].Route != "create_ticket" {
						t.Errorf("steps = %+v, want one create_ticket step", sts)
					}
				})
			}
		})
	}
}

// postToolCall sends one create_ticket tools/call with id to target
// through tr, and returns the answer's Toolguard-Outcome. The answer must
// be a JSON-RPC response with that id.
func postToolCall(t *testing.T, tr http.RoundTripper, target, id string) string {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"create_ticket","arguments":{"project":"ops","title":"Spelled"}}}`
	req, err := http.NewRequest(http.MethodPost, target, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer alice")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var got struct {
		ID json.RawMessage `json:"id"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(data, &got) != nil || string(got.ID) != id {
		t.Fatalf("answer %d %s, want a JSON-RPC response with id %s", resp.StatusCode, data, id)
	}
	return resp.Header.Get(HeaderOutcome)
}
