package proxy

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// A 2025-03-26 batch of tools/call requests is split: each call is guarded
// on its own and answered in its place; the same batch again (other ids)
// is answered from the journal, and the read-only call is relayed.
func TestMCPBatchSplit(t *testing.T) {
	batch := func(ids ...string) string {
		return `[{"jsonrpc":"2.0","id":` + ids[0] + `,"method":"tools/call","params":{"name":"create_ticket","arguments":{"project":"ops","title":"A"}}},` +
			`{"jsonrpc":"2.0","id":` + ids[1] + `,"method":"tools/call","params":{"name":"create_ticket","arguments":{"project":"ops","title":"B"}}},` +
			`{"jsonrpc":"2.0","id":` + ids[2] + `,"method":"tools/call","params":{"name":"get_ticket","arguments":{"project":"ops","title":"A"}}}]`
	}
	for _, w := range bothWays {
		t.Run(string(w), func(t *testing.T) {
			ts := newTicketServerWith(t, &sdk.StreamableHTTPOptions{Stateless: true})
			p := newMCPProxy(t, ts, Options{})
			client, target := &http.Client{}, p.proxy.String()+"/mcp/tickets"
			if w == viaForward {
				client.Transport = &http.Transport{Proxy: http.ProxyURL(p.proxy)}
				target = ts.url.String()
			}
			send := func(body string) []map[string]json.RawMessage {
				req, _ := http.NewRequest(http.MethodPost, target, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Authorization", "Bearer alice")
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				data, _ := io.ReadAll(resp.Body)
				var out []map[string]json.RawMessage
				if resp.StatusCode != 200 || json.Unmarshal(data, &out) != nil || len(out) != 3 {
					t.Fatalf("answer %d %s, want an array of three responses", resp.StatusCode, data)
				}
				return out
			}
			first := send(batch(`1`, `"b"`, `3`))
			second := send(batch(`10`, `"bb"`, `30`))
			for i, want := range []string{`10`, `"bb"`, `30`} {
				if got := string(second[i]["id"]); got != want {
					t.Errorf("entry %d: id %s, want %s", i, got, want)
				}
			}
			for i := range 2 {
				if string(first[i]["result"]) != string(second[i]["result"]) || !strings.Contains(string(first[i]["result"]), `"T-`) {
					t.Errorf("entry %d: %s then %s, want the same ticket", i, first[i]["result"], second[i]["result"])
				}
			}
			if n := ts.created.Load(); n != 2 {
				t.Errorf("effects = %d, want 2", n)
			}
			if n := ts.reads.Load(); n != 2 {
				t.Errorf("reads = %d, want 2 (relayed each time)", n)
			}
			if n := len(p.steps(t)); n != 2 {
				t.Errorf("steps = %d, want 2", n)
			}
		})
	}
}
