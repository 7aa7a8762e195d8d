package gateway

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolguard/toolguard/mcp/servers"
	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/problem"
	"github.com/toolguard/toolguard/rules"
)

// pipeline is a guard pipeline that answers every guarded tools/call with
// a result naming its tool, relays the scripted messages first, and
// refuses bodies as told.
type pipeline struct {
	mu       sync.Mutex
	refuse   int // the status of a body refused (0: read it)
	relays   []string
	relayed  func() // runs once the relays are made, before the answer
	guarded  []string
	reserved int // body reservations not given back
}

func (p *pipeline) ReadBody(r *http.Request) ([]byte, func(), *http.Response) {
	if p.refuse != 0 {
		return nil, nil, response(r, p.refuse, http.Header{}, []byte("refused"))
	}
	body, _ := io.ReadAll(r.Body)
	p.mu.Lock()
	p.reserved++
	p.mu.Unlock()
	var once sync.Once
	return body, func() {
		once.Do(func() {
			p.mu.Lock()
			p.reserved--
			p.mu.Unlock()
		})
	}, nil
}

func (p *pipeline) Guard(t Tool, relay func(key string, msg []byte)) *http.Response {
	p.mu.Lock()
	p.guarded = append(p.guarded, t.Call.Name)
	p.mu.Unlock()
	for _, m := range p.relays {
		if relay != nil {
			relay("key-1", []byte(m))
		}
	}
	if p.relayed != nil {
		p.relayed()
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(t.Call.ID), "result": map[string]any{"tool": t.Call.Name}})
	return response(t.In, http.StatusOK, http.Header{"Content-Type": {"application/json"}}, body)
}

func (p *pipeline) Problem(r *http.Request, d *problem.Details) *http.Response {
	return response(r, d.Status, http.Header{"Content-Type": {"application/problem+json"}}, []byte(d.Detail))
}

// upstream is an MCP server that answers every message with a result
// naming its method, and counts them.
func upstream(t *testing.T) (*url.URL, *int) {
	t.Helper()
	n := 0
	var mu sync.Mutex
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		mu.Unlock()
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.NewDecoder(r.Body).Decode(&m)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"relayed": m.Method}})
	}))
	t.Cleanup(ts.Close)
	u, _ := url.Parse(ts.URL + "/mcp")
	return u, &n
}

func newGateway(t *testing.T, p *pipeline) (*Gateway, *servers.Server, *int) {
	t.Helper()
	u, n := upstream(t)
	api, err := rules.Parse("things.yaml", []byte("api: things\nmcp: {path: /mcp}\ntools:\n  - name: create_thing\n    effect: irreversible\n  - name: get_thing\n    effect: safe\n"))
	if err != nil {
		t.Fatal(err)
	}
	set := servers.NewSet([]servers.Gateway{{Name: "things", URL: u, API: api}}, nil)
	g := New(Config{Pipeline: p, Upstream: http.DefaultTransport, Policy: servers.Policy{Unlisted: policy.UnlistedGuard},
		UpstreamTimeout: 5 * time.Second, MaxResponse: 1 << 20})
	return g, set.Named("things"), n
}

func post(body string, accept string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "http://things.test/mcp", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	if accept != "" {
		r.Header.Set("Accept", accept)
	}
	return r
}

func call(id int, tool string) string {
	return `{"jsonrpc":"2.0","id":` + string(rune('0'+id)) + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":{}}}`
}

func read(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestHandle(t *testing.T) {
	for _, tc := range []struct {
		name        string
		method      string
		body        string
		refuse      int
		wantPass    bool
		wantListing string
		wantStatus  int
		wantOutcome string
		wantBody    string
		wantGuarded []string
		wantRelayed int
	}{
		{name: "a GET passes", method: http.MethodGet, wantPass: true},
		{name: "a guarded call", body: call(1, "create_thing"), wantStatus: 200, wantBody: `"tool":"create_thing"`, wantGuarded: []string{"create_thing"}},
		{name: "a safe tool passes", body: call(1, "get_thing"), wantPass: true},
		{name: "tools/list passes with its id", body: `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`, wantPass: true, wantListing: "7"},
		{name: "a notification passes", body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, wantPass: true},
		{name: "not JSON-RPC", body: `{"nope"`, wantStatus: 400, wantOutcome: "blocked", wantBody: `"error"`},
		{name: "too large", body: call(1, "create_thing"), refuse: 413, wantStatus: 413, wantOutcome: "blocked", wantBody: "limits.max_body"},
		{name: "no room", body: call(1, "create_thing"), refuse: 503, wantStatus: 503, wantBody: "refused"},
		{name: "a bad tools/call", body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`, wantStatus: 200, wantOutcome: "blocked", wantBody: `"error"`},
		{name: "a mixed batch", body: "[" + call(1, "create_thing") + `,{"jsonrpc":"2.0","id":2,"method":"tools/list"}]`, wantStatus: 400, wantOutcome: "blocked", wantBody: "mixes tools/call"},
		{name: "a batch of calls", body: "[" + call(1, "create_thing") + "," + call(2, "get_thing") + "]", wantStatus: 200,
			wantBody: `[{"id":1,"jsonrpc":"2.0","result":{"tool":"create_thing"}},{"id":2,"jsonrpc":"2.0","result":{"relayed":"tools/call"}}]`, wantGuarded: []string{"create_thing"}, wantRelayed: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &pipeline{refuse: tc.refuse}
			g, ep, relayed := newGateway(t, p)
			r := post(tc.body, "")
			if tc.method != "" {
				r.Method = tc.method
			}
			resp, listing := g.Handle(r, ep, ep.URL)
			if tc.wantPass {
				if resp != nil {
					t.Fatalf("answered %d %s, want it passed through", resp.StatusCode, read(t, resp))
				}
				if string(listing) != tc.wantListing {
					t.Fatalf("listing %q, want %q", listing, tc.wantListing)
				}
				if tc.body != "" && read(t, &http.Response{Body: r.Body}) != tc.body {
					t.Fatal("the body of a message that passes was not put back")
				}
			} else {
				if resp == nil {
					t.Fatal("passed through, want an answer")
				}
				body := read(t, resp)
				if resp.StatusCode != tc.wantStatus || resp.Header.Get(headerOutcome) != tc.wantOutcome || !strings.Contains(body, tc.wantBody) {
					t.Fatalf("answer %d (outcome %q) %s; want %d (%q) with %s", resp.StatusCode, resp.Header.Get(headerOutcome), body, tc.wantStatus, tc.wantOutcome, tc.wantBody)
				}
			}
			if strings.Join(p.guarded, ",") != strings.Join(tc.wantGuarded, ",") || *relayed != tc.wantRelayed {
				t.Fatalf("guarded %v, relayed %d; want %v, %d", p.guarded, *relayed, tc.wantGuarded, tc.wantRelayed)
			}
			if p.reserved != 0 {
				t.Fatalf("%d body reservations not given back", p.reserved)
			}
		})
	}
}

// An agent that accepts an event stream gets the server's messages before
// the response as they come, then the response as the last event; the
// body's room is given back once the call has finished. Serve writes the
// messages to the agent's writer, flushed, while the call still runs.
func TestStreamedAnswer(t *testing.T) {
	for _, way := range []string{"Handle", "Serve"} {
		t.Run(way, func(t *testing.T) {
			p := &pipeline{relays: []string{`{"jsonrpc":"2.0","method":"notifications/progress"}`}}
			g, ep, _ := newGateway(t, p)
			answer := func(r *http.Request) *http.Response {
				if way == "Handle" {
					resp, _ := g.Handle(r, ep, ep.URL)
					return resp
				}
				rec := httptest.NewRecorder()
				if len(p.relays) > 0 {
					p.relayed = func() {
						if !rec.Flushed || !strings.Contains(rec.Body.String(), "notifications/progress") {
							t.Errorf("when the call was still running, the agent had %q (flushed: %v)", rec.Body, rec.Flushed)
						}
					}
				}
				if answered, _ := g.Serve(rec, r, ep, ep.URL); !answered {
					t.Fatal("Serve passed a guarded call through")
				}
				return rec.Result()
			}
			resp := answer(post(call(1, "create_thing"), "application/json, text/event-stream"))
			if resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get(headerKey) != "key-1" || resp.Header.Get(headerOutcome) != "forwarded" {
				t.Fatalf("head %v", resp.Header)
			}
			var events []string
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
					events = append(events, data)
				}
			}
			resp.Body.Close()
			if len(events) != 2 || !strings.Contains(events[0], "notifications/progress") || !strings.Contains(events[1], `"tool":"create_thing"`) {
				t.Fatalf("events %q", events)
			}
			p.mu.Lock()
			reserved := p.reserved
			p.relays, p.relayed = nil, nil // without messages first, the answer is the plain response
			p.mu.Unlock()
			if reserved != 0 {
				t.Fatal("the streamed call kept the body's room")
			}
			resp = answer(post(call(1, "create_thing"), "text/event-stream"))
			if resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(read(t, resp), `"tool":"create_thing"`) {
				t.Fatalf("without relayed messages: %v", resp.Header)
			}
		})
	}
}

// What passes through goes to the server and back, marked passthrough,
// with the agent's Toolguard-* headers and the server's removed; an
// unreachable server is the pipeline's problem.
func TestPassthrough(t *testing.T) {
	p := &pipeline{}
	g, ep, n := newGateway(t, p)
	r := post(`{"jsonrpc":"2.0","id":3,"method":"ping"}`, "")
	r.Header.Set("Toolguard-Workflow", "w")
	w := httptest.NewRecorder()
	g.Passthrough(w, r, ep, nil)
	if w.Code != 200 || w.Header().Get(headerOutcome) != "passthrough" || !strings.Contains(w.Body.String(), `"relayed":"ping"`) || *n != 1 {
		t.Fatalf("passthrough: %d %v %s (server saw %d)", w.Code, w.Header(), w.Body.String(), *n)
	}
	gone, _ := url.Parse("http://127.0.0.1:1/mcp")
	dead := servers.NewSet([]servers.Gateway{{Name: "things", URL: gone, API: ep.API}}, nil).Named("things")
	w = httptest.NewRecorder()
	g.Passthrough(w, post(`{"jsonrpc":"2.0","id":3,"method":"ping"}`, ""), dead, nil)
	if w.Code != http.StatusBadGateway || !strings.Contains(w.Body.String(), "MCP server things unreachable") {
		t.Fatalf("unreachable: %d %s", w.Code, w.Body.String())
	}
}
