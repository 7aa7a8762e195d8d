package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpTickets is a real MCP server (the official Go SDK) whose tools count
// their effects. hold, when set, is called by a tool after its effect and
// before it answers.
type mcpTickets struct {
	url      string
	effects  atomic.Int64
	mu       sync.Mutex
	byTitle  map[string]string
	perTitle map[string]int
	holdMu   sync.Mutex
	hold     func()
}

type ticketArgs struct {
	Title string `json:"title"`
}

type ticketID struct {
	ID    string `json:"id,omitempty"`
	Count int    `json:"count"`
}

func newMCPTickets(t *testing.T) *mcpTickets {
	t.Helper()
	m := &mcpTickets{byTitle: map[string]string{}, perTitle: map[string]int{}}
	srv := sdk.NewServer(&sdk.Implementation{Name: "tickets", Version: "1"}, nil)
	effect := func(_ context.Context, _ *sdk.CallToolRequest, in ticketArgs) (*sdk.CallToolResult, ticketID, error) {
		id := fmt.Sprintf("T-%d", m.effects.Add(1))
		m.mu.Lock()
		m.byTitle[in.Title] = id
		m.perTitle[in.Title]++
		m.mu.Unlock()
		m.holdMu.Lock()
		h := m.hold
		m.holdMu.Unlock()
		if h != nil {
			h()
		}
		return nil, ticketID{ID: id, Count: 1}, nil
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "create_ticket"}, effect)
	sdk.AddTool(srv, &sdk.Tool{Name: "create_note"}, effect)
	sdk.AddTool(srv, &sdk.Tool{Name: "close_ticket"}, effect)
	sdk.AddTool(srv, &sdk.Tool{Name: "find_ticket"}, func(_ context.Context, _ *sdk.CallToolRequest, in ticketArgs) (*sdk.CallToolResult, ticketID, error) {
		m.mu.Lock()
		defer m.mu.Unlock()
		if id, ok := m.byTitle[in.Title]; ok {
			return nil, ticketID{ID: id, Count: 1}, nil
		}
		return nil, ticketID{}, nil
	})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	m.url = hs.URL + "/mcp"
	return m
}

func (m *mcpTickets) setHold(h func()) {
	m.holdMu.Lock()
	m.hold = h
	m.holdMu.Unlock()
}

// mcpTicketRules describes the ticket server's tools, on host for the
// forward proxy.
func mcpTicketRules(host string) string {
	return "api: tickets\nmcp: {path: /mcp}\nhosts: [\"" + host + "\"]\n" + mcpTicketTools
}

const mcpTicketTools = `tools:
  - name: create_ticket
    effect: irreversible
    key: {fields: [title]}
    operation_id: result:structuredContent.id
    lookup:
      tool: find_ticket
      arguments: {title: "{{arguments.title}}"}
      found: {result: {structuredContent.count: 1}}
      absent: {result: {structuredContent.count: 0}}
      operation_id: result:structuredContent.id
  - name: create_note
    effect: irreversible
  - name: close_ticket
    effect: irreversible
    approval: required
  - name: find_ticket
    effect: safe
`

func mcpSetup(t *testing.T, m *mcpTickets) *setup {
	s := newSetup(t, map[string]string{"tickets.yaml": mcpTicketRules(strings.TrimPrefix(strings.TrimSuffix(m.url, "/mcp"), "http://"))})
	s.env = append(s.env, "TOOLGUARD_MCP_SERVERS=tickets="+m.url)
	return s
}

// mcpWays are how an agent reaches the ticket server: "gateway" (p's
// /mcp/tickets) or "forward" (the server's URL through p as HTTP proxy).
var mcpWays = []string{"gateway", "forward"}

// mcpSession opens a session of the official SDK client to the ticket
// server m through p, the way named.
func mcpSession(t *testing.T, ctx context.Context, p *proc, m *mcpTickets, way string) *sdk.ClientSession {
	t.Helper()
	tr := &sdk.StreamableClientTransport{
		Endpoint:   p.proxyURL.String() + "/mcp/tickets",
		HTTPClient: &http.Client{Transport: credentialed{&http.Transport{}}},
		MaxRetries: -1,
	}
	if way == "forward" {
		tr.Endpoint = m.url
		tr.HTTPClient.Transport = credentialed{&http.Transport{Proxy: http.ProxyURL(p.proxyURL)}}
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("connect to the gateway: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// killDuringTool sends one tools/call through p and SIGKILLs toolguard
// while the tool, having made its effect, has not answered yet.
func killDuringTool(t *testing.T, p *proc, m *mcpTickets, way string, call *sdk.CallToolParams) {
	t.Helper()
	reached, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	m.setHold(func() {
		once.Do(func() { close(reached) })
		<-release
	})
	done := make(chan error, 1)
	go func() {
		_, err := mcpSession(t, context.Background(), p, m, way).CallTool(context.Background(), call)
		done <- err
	}()
	<-reached
	p.kill()
	close(release)
	if err := <-done; err == nil {
		t.Error("the call answered although toolguard was killed before the tool did")
	}
	m.setHold(nil)
}

// mcpHold decodes the toolguard problem of a hold result.
func mcpHold(t *testing.T, res *sdk.CallToolResult) (typ, key string) {
	t.Helper()
	raw, _ := json.Marshal(res.Meta["toolguard/problem"])
	var p struct{ Type, Key string }
	if !res.IsError || json.Unmarshal(raw, &p) != nil || p.Type == "" {
		t.Fatalf("result is not a toolguard hold: %+v", res)
	}
	if text := res.Content[0].(*sdk.TextContent).Text; !strings.Contains(text, p.Key) {
		t.Errorf("hold text does not name the step key: %q", text)
	}
	return p.Type, p.Key
}

// kill -9 while a tools/call is held by the tool; the retry, in a new
// session with the restarted proxy, is recovered by the rule's lookup
// tool; without a lookup it gets a readable hold. Never a second effect.
func TestMCPKillDuringCall(t *testing.T) {
	for _, way := range mcpWays {
		t.Run(way, func(t *testing.T) {
			ctx := context.Background()
			m := newMCPTickets(t)
			s := mcpSetup(t, m)

			call := &sdk.CallToolParams{Name: "create_ticket", Arguments: map[string]any{"title": "Disk full"}}
			killDuringTool(t, s.start(t), m, way, call)
			p := s.start(t)
			res, err := mcpSession(t, ctx, p, m, way).CallTool(ctx, call)
			if err != nil || res.IsError {
				t.Fatalf("retry after the crash: %+v, %v", res, err)
			}
			if text := res.Content[0].(*sdk.TextContent).Text; !strings.Contains(text, "T-1") {
				t.Errorf("recovered answer %q does not carry the lookup's operation id T-1", text)
			}
			if n := m.effects.Load(); n != 1 {
				t.Fatalf("effects after the recovered retry = %d, want 1", n)
			}

			note := &sdk.CallToolParams{Name: "create_note", Arguments: map[string]any{"title": "Call back"}}
			p.kill()
			killDuringTool(t, s.start(t), m, way, note)
			p = s.start(t)
			for i := range 2 {
				res, err := mcpSession(t, ctx, p, m, way).CallTool(ctx, note)
				if err != nil {
					t.Fatalf("retry %d: a hold must reach the client as a tool result: %v", i, err)
				}
				if typ, _ := mcpHold(t, res); typ != "urn:toolguard:ambiguous-effect" {
					t.Errorf("retry %d: hold %s, want ambiguous-effect", i, typ)
				}
			}
			if n := m.effects.Load(); n != 2 {
				t.Fatalf("effects = %d, want 2 (one per intent)", n)
			}
		})
	}
}

// An approval-gated tool: a hold result, then `toolguard review approve`
// lets exactly one call run, and the retry gets its result.
func TestMCPApprovalCLI(t *testing.T) {
	ctx := context.Background()
	m := newMCPTickets(t)
	p := mcpSetup(t, m).start(t)
	call := &sdk.CallToolParams{Name: "close_ticket", Arguments: map[string]any{"title": "T-7"}}
	res, err := mcpSession(t, ctx, p, m, "gateway").CallTool(ctx, call)
	if err != nil {
		t.Fatal(err)
	}
	typ, key := mcpHold(t, res)
	if typ != "urn:toolguard:awaiting-approval" || m.effects.Load() != 0 {
		t.Fatalf("hold %s with %d effects, want awaiting-approval and none", typ, m.effects.Load())
	}
	if out, err := p.cli("review", "approve", key, "--admin", p.adminURL).CombinedOutput(); err != nil {
		t.Fatalf("approve: %v\n%s", err, out)
	}
	var results []*sdk.CallToolResult
	for range 2 {
		res, err := mcpSession(t, ctx, p, m, "gateway").CallTool(ctx, call)
		if err != nil || res.IsError {
			t.Fatalf("after approval: %+v, %v", res, err)
		}
		results = append(results, res)
	}
	if n := m.effects.Load(); n != 1 {
		t.Errorf("effects = %d, want exactly 1", n)
	}
	a, _ := json.Marshal(results[0])
	b, _ := json.Marshal(results[1])
	if string(a) != string(b) {
		t.Errorf("the retry did not get the approved call's result:\n%s\n%s", a, b)
	}
}

// TestMCPChaosExactlyOnce is the promise for MCP agents under fire: agents
// retry many tools/call intents, each attempt in a new session as a client
// re-initialising after a broken stream, while toolguard is SIGKILLed and
// restarted on the same journal at random moments. The tool has no
// idempotency key, only a lookup tool: every intent must still end with
// exactly one effect and a successful result.
func TestMCPChaosExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos run skipped in -short mode")
	}
	m := newMCPTickets(t)
	m.setHold(func() { time.Sleep(time.Duration(2+rand.IntN(5)) * time.Millisecond) }) // the tool's own work, so kills land mid-call
	s := mcpSetup(t, m)
	addr := freePort(t)
	s.args = append(s.args, "--listen", addr)
	// A short lease: after a kill, a lookup's "absent" is trusted once the
	// killed process's lease plus the upstream timeout has passed.
	s.env = append(s.env, "TOOLGUARD_UPSTREAM_TIMEOUT=1s", "TOOLGUARD_RECOVERY_LEASE=1s")
	p := s.start(t)
	endpoint := "http://" + addr + "/mcp/tickets"

	// Workers come in pairs that send the same intents: duplicate
	// deliveries racing each other through the kills.
	const workers, intents = 8, 60
	var wg sync.WaitGroup
	failures := make(chan string, workers*intents)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range intents {
				title := fmt.Sprintf("p%d-i%d", w/2, i)
				if !callUntilDone(endpoint, title) {
					failures <- title
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	// Kills for a bounded time, then the workers finish on a process left
	// running: on a loaded machine, restarts every 50–200 ms could starve
	// an intent of any window to complete in, which tests the machine, not
	// toolguard. Every intent still sees kills around its calls.
	kills, chaosEnd := 0, time.After(10*time.Second)
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-chaosEnd:
			<-done
			running = false
		case <-time.After(time.Duration(50+rand.IntN(150)) * time.Millisecond): // the chaos schedule
			p.kill()
			kills++
			p = s.start(t)
		}
	}
	close(failures)
	for title := range failures {
		t.Errorf("intent %s never got a successful result", title)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for pair := range workers / 2 {
		for i := range intents {
			title := fmt.Sprintf("p%d-i%d", pair, i)
			if n := m.perTitle[title]; n != 1 {
				t.Errorf("intent %s: %d effects, want exactly 1", title, n)
			}
		}
	}
	t.Logf("%d intents sent twice each, %d SIGKILLs, %d effects", workers/2*intents, kills, m.effects.Load())
	if kills == 0 {
		t.Error("toolguard was never killed: the run proved nothing")
	}
}

// callUntilDone is an MCP agent: it sends one create_ticket intent, each
// attempt in a new session, until it gets a result that is not an error.
// Holds (in progress, settling) are results with isError: it waits and
// calls again, as their text says.
func callUntilDone(endpoint, title string) bool {
	call := &sdk.CallToolParams{Name: "create_ticket", Arguments: map[string]any{"title": title}}
	for attempt := 0; attempt < 300; attempt++ {
		if callOnce(endpoint, call) {
			return true
		}
		time.Sleep(20 * time.Millisecond) // the agent's retry backoff
	}
	return false
}

func callOnce(endpoint string, call *sdk.CallToolParams) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tr := &sdk.StreamableClientTransport{Endpoint: endpoint, MaxRetries: -1, DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: credentialed{&http.Transport{DisableKeepAlives: true}}}}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		return false
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, call)
	return err == nil && !res.IsError
}
