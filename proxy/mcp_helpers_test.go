package proxy

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/journal/bolt"
	"github.com/toolguard/toolguard/rules"
	"github.com/toolguard/toolguard/tlsca"
)

// ticketServer is a real MCP server (the official Go SDK, Streamable HTTP
// with sessions, SSE answers) whose tools count their effects.
type ticketServer struct {
	url     *url.URL // the MCP endpoint
	created atomic.Int64
	failed  atomic.Int64 // create_ticket calls that returned isError
	invalid atomic.Int64 // create_ticket calls refused as invalid params
	reads   atomic.Int64
	closed  atomic.Int64
	purged  atomic.Int64
	asked   atomic.Int64 // deploy_ticket calls answered with input requests
	// streamsClosed counts streams polled_ticket closed before answering.
	streamsClosed atomic.Int64
	calls         atomic.Int64 // every tools/call that reached a tool
	// cancels counts notifications/cancelled that reached the server.
	cancels atomic.Int64
	// slow, when set, makes slow_ticket wait for it after its effect.
	slow     chan struct{}
	slowDone chan struct{} // gets a value when slow_ticket has made its effect

	mu      sync.Mutex
	tickets map[string]string // title → id
	// roots trusts the server's certificate; nil for plain HTTP.
	roots *x509.CertPool
	// callHeaders are the headers of the last tools/call POST.
	callHeaders http.Header
}

type ticketIn struct {
	Project  string `json:"project"`
	Title    string `json:"title"`
	Priority string `json:"priority,omitempty"`
}

type ticketOut struct {
	ID string `json:"id"`
}

type findIn struct {
	Title string `json:"title"`
}

type findOut struct {
	Count int    `json:"count"`
	ID    string `json:"id,omitempty"`
}

func newTicketServer(t *testing.T) *ticketServer {
	t.Helper()
	return newTicketServerWith(t, nil)
}

// newTicketServerWith serves the ticket tools with the SDK's Streamable
// HTTP options (stateless, JSON answers).
func newTicketServerWith(t *testing.T, opts *sdk.StreamableHTTPOptions) *ticketServer {
	t.Helper()
	return startTicketServer(t, opts, false)
}

// newTLSTicketServer serves the ticket tools over HTTPS.
func newTLSTicketServer(t *testing.T) *ticketServer {
	t.Helper()
	return startTicketServer(t, nil, true)
}

func startTicketServer(t *testing.T, opts *sdk.StreamableHTTPOptions, useTLS bool) *ticketServer {
	t.Helper()
	ts := &ticketServer{tickets: map[string]string{}, slowDone: make(chan struct{}, 1)}
	srv := sdk.NewServer(&sdk.Implementation{Name: "tickets", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "create_ticket", Description: "open a ticket"}, ts.create)
	sdk.AddTool(srv, &sdk.Tool{Name: "polled_ticket"}, func(ctx context.Context, req *sdk.CallToolRequest, in ticketIn) (*sdk.CallToolResult, ticketOut, error) {
		// 2025-11-25 polling: close the request's stream before answering;
		// the client resumes it with a GET carrying Last-Event-ID.
		if req.Extra != nil && req.Extra.CloseSSEStream != nil {
			req.Extra.CloseSSEStream(sdk.CloseSSEStreamArgs{RetryAfter: 10 * time.Millisecond})
			ts.streamsClosed.Add(1)
		}
		return ts.create(ctx, req, in)
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "progress_ticket"}, func(ctx context.Context, req *sdk.CallToolRequest, in ticketIn) (*sdk.CallToolResult, ticketOut, error) {
		for i := range 2 {
			req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: float64(i + 1), Total: 2})
		}
		return ts.create(ctx, req, in)
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "confirm_ticket"}, func(ctx context.Context, req *sdk.CallToolRequest, in ticketIn) (*sdk.CallToolResult, ticketOut, error) {
		res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "Open " + in.Title + "?"})
		if err != nil {
			return nil, ticketOut{}, fmt.Errorf("ask the user: %w", err)
		}
		if res.Action != "accept" {
			return nil, ticketOut{}, fmt.Errorf("the user said %s", res.Action)
		}
		return ts.create(ctx, req, in)
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "open_ticket"}, ts.create)
	sdk.AddTool(srv, &sdk.Tool{Name: "open_hidden"}, ts.create)
	sdk.AddTool(srv, &sdk.Tool{Name: "close_ticket"}, func(_ context.Context, _ *sdk.CallToolRequest, in ticketIn) (*sdk.CallToolResult, ticketOut, error) {
		ts.calls.Add(1)
		ts.closed.Add(1)
		return nil, ticketOut{ID: in.Title}, nil
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "slow_ticket"}, func(ctx context.Context, req *sdk.CallToolRequest, in ticketIn) (*sdk.CallToolResult, ticketOut, error) {
		ts.calls.Add(1)
		id := ts.record(in.Title)
		if token := req.Params.GetProgressToken(); token != nil { // the answer is streaming now
			req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token, Progress: 1, Total: 2, Message: "created, finishing"})
		}
		ts.slowDone <- struct{}{}
		<-ts.slow // the agent's disconnect does not stop the tool
		return nil, ticketOut{ID: id}, nil
	})
	ro := true
	sdk.AddTool(srv, &sdk.Tool{Name: "get_ticket", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: ro}}, func(_ context.Context, _ *sdk.CallToolRequest, in ticketIn) (*sdk.CallToolResult, findOut, error) {
		ts.reads.Add(1)
		return nil, ts.find(in.Title), nil
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "deploy_ticket"}, func(_ context.Context, req *sdk.CallToolRequest, in ticketIn) (*sdk.CallToolResult, ticketOut, error) {
		if len(req.Params.InputResponses) == 0 { // multi round-trip: ask first
			ts.asked.Add(1)
			return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{"confirm": &sdk.ElicitParams{Message: "Deploy " + in.Title + "?"}}, RequestState: "s-1"}, ticketOut{}, nil
		}
		ts.calls.Add(1)
		return nil, ticketOut{ID: ts.record(in.Title)}, nil
	})
	type byID struct {
		ID string `json:"id"`
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "ticket_by_id"}, func(_ context.Context, _ *sdk.CallToolRequest, in byID) (*sdk.CallToolResult, findOut, error) {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		for _, id := range ts.tickets {
			if id == in.ID {
				return nil, findOut{Count: 1, ID: id}, nil
			}
		}
		return nil, findOut{}, nil
	})
	destructive := true
	sdk.AddTool(srv, &sdk.Tool{Name: "purge_tickets", Annotations: &sdk.ToolAnnotations{DestructiveHint: &destructive}}, func(_ context.Context, _ *sdk.CallToolRequest, in findIn) (*sdk.CallToolResult, findOut, error) {
		ts.calls.Add(1)
		ts.purged.Add(1)
		return nil, findOut{}, nil
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "find_ticket", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: ro}}, func(_ context.Context, _ *sdk.CallToolRequest, in findIn) (*sdk.CallToolResult, findOut, error) {
		ts.reads.Add(1)
		return nil, ts.find(in.Title), nil
	})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, opts)
	hs := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			if bytes.Contains(body, []byte(`"notifications/cancelled"`)) {
				ts.cancels.Add(1)
			}
			if bytes.Contains(body, []byte(`"tools/call"`)) {
				ts.mu.Lock()
				ts.callHeaders = r.Header.Clone()
				ts.mu.Unlock()
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		h.ServeHTTP(w, r)
	}))
	if useTLS {
		hs.StartTLS()
		ts.roots = x509.NewCertPool()
		ts.roots.AddCert(hs.Certificate())
	} else {
		hs.Start()
	}
	t.Cleanup(hs.Close)
	ts.url, _ = url.Parse(hs.URL + "/mcp")
	return ts
}

func (ts *ticketServer) create(_ context.Context, _ *sdk.CallToolRequest, in ticketIn) (*sdk.CallToolResult, ticketOut, error) {
	switch {
	case in.Priority == "bogus":
		ts.invalid.Add(1)
		return nil, ticketOut{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "priority must be low, normal or high"}
	case in.Title == "fail":
		ts.calls.Add(1)
		ts.failed.Add(1)
		return nil, ticketOut{}, fmt.Errorf("project %s is archived", in.Project)
	}
	ts.calls.Add(1)
	return nil, ticketOut{ID: ts.record(in.Title)}, nil
}

func (ts *ticketServer) record(title string) string {
	n := ts.created.Add(1)
	id := fmt.Sprintf("T-%d", n)
	ts.mu.Lock()
	ts.tickets[title] = id
	ts.mu.Unlock()
	return id
}

func (ts *ticketServer) find(title string) findOut {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if id, ok := ts.tickets[title]; ok {
		return findOut{Count: 1, ID: id}
	}
	return findOut{}
}

// ticketRules describes the ticket server's tools; hosts is "" for a
// gateway-only file.
func ticketRules(t *testing.T, host string) *rules.API {
	t.Helper()
	src := "api: tickets\nmcp: {path: /mcp}\n"
	if host != "" {
		src += "hosts: [\"" + host + "\"]\n"
	}
	src += `tools:
  - name: create_ticket
    effect: irreversible
    key: {fields: [project, title]}
    operation_id: result:structuredContent.id
    lookup:
      tool: find_ticket
      arguments: {title: "{{arguments.title}}"}
      found: {result: {structuredContent.count: 1}}
      absent: {result: {structuredContent.count: 0}}
      operation_id: result:structuredContent.id
  - name: open_ticket
    effect: irreversible
    key: {fields: [project, title]}
    operation_id: result:structuredContent.id
    verify:
      tool: ticket_by_id
      arguments: {id: "{{result.structuredContent.id}}"}
      expect: {result: {structuredContent.count: 1}}
      within: 5s
      mode: sync
  - name: open_hidden
    effect: irreversible
    verify:
      tool: find_ticket
      arguments: {title: "never {{arguments.title}}"}
      expect: {result: {structuredContent.count: 1}}
      within: 300ms
      mode: sync
  - name: polled_ticket
    effect: irreversible
  - name: progress_ticket
    effect: irreversible
  - name: confirm_ticket
    effect: irreversible
  - name: slow_ticket
    effect: irreversible
    key: {fields: [project, title]}
  - name: close_ticket
    effect: irreversible
    approval: required
  - name: get_ticket
    effect: safe
`
	api, err := rules.Parse("tickets.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return api
}

// mcpProxy is a toolguard proxy in front of a ticket server, reachable
// through its gateway endpoint and as a forward proxy.
type mcpProxy struct {
	srv     *Server
	j       *bolt.Journal
	proxy   *url.URL // the proxy listener
	tickets *ticketServer
	logs    *syncBuffer
	// roots trusts the proxy's CA when the ticket server is HTTPS.
	roots *x509.CertPool
}

func newMCPProxy(t *testing.T, ts *ticketServer, opts Options) *mcpProxy {
	t.Helper()
	set, err := rules.NewSet(ticketRules(t, ts.url.Host))
	if err != nil {
		t.Fatal(err)
	}
	opts.Rules = set
	opts.MCPServers = append(opts.MCPServers, MCPServer{Name: "tickets", URL: ts.url, API: ticketRules(t, "")})
	var roots *x509.CertPool
	if ts.roots != nil {
		ca, err := tlsca.Create(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		opts.CA, opts.Transport.RootCAs = ca, ts.roots
		roots = x509.NewCertPool()
		roots.AddCert(ca.Cert)
	}
	p := startMCPProxy(t, opts)
	p.tickets, p.roots = ts, roots
	return p
}

// startMCPProxy runs a proxy with opts on a fresh journal.
func startMCPProxy(t *testing.T, opts Options) *mcpProxy {
	t.Helper()
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	j, err := bolt.Open(filepath.Join(t.TempDir(), "tg.db"), bolt.Options{Logger: log, SeedStates: true}) // the tests simulate crashes by rewriting steps
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if errs := j.Check(); len(errs) > 0 {
			t.Errorf("journal check: %v", errs)
		}
		j.Close()
	})
	opts.Journal, opts.Logger, opts.Secret = j, log, []byte("0123456789abcdef0123456789abcdef")
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("proxy log:\n%s", logs.String())
		}
	})
	pu, _ := url.Parse(hs.URL)
	return &mcpProxy{srv: srv, j: j, proxy: pu, logs: logs}
}

// way is how an agent reaches the MCP server.
type way string

const (
	viaGateway way = "gateway"
	viaForward way = "forward proxy"
)

// agent is an MCP client (the official Go SDK) of one principal.
type agent struct {
	p     *mcpProxy
	way   way
	token string
	// credHeader, when set, carries token as it is instead of
	// Authorization: Bearer token; an empty token sends no credential.
	credHeader string
	// version is the protocol version the client asks for; "" = the SDK's
	// latest.
	version string
	// progress counts the progress notifications the agent received;
	// elicited the elicitation requests it answered.
	progress, elicited atomic.Int64
	// progressed gets a value for each progress notification received.
	progressed chan struct{}
	// outcomes records the Toolguard-Outcome of every answered tools/call.
	mu       sync.Mutex
	outcomes []string
	// last is the header of the last answered tools/call.
	last http.Header
}

func (p *mcpProxy) agent(w way, token string) *agent {
	return &agent{p: p, way: w, token: token, progressed: make(chan struct{}, 64)}
}

// session opens a new MCP session (initialize included).
func (a *agent) session(t *testing.T, ctx context.Context) *sdk.ClientSession {
	t.Helper()
	base := &http.Transport{}
	endpoint := a.p.proxy.String() + "/mcp/tickets"
	if a.way == viaForward {
		base.Proxy = http.ProxyURL(a.p.proxy)
		base.TLSClientConfig = &tls.Config{RootCAs: a.p.roots}
		endpoint = a.p.tickets.url.String()
	}
	t.Cleanup(base.CloseIdleConnections)
	client := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "1"}, &sdk.ClientOptions{
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			a.elicited.Add(1)
			return &sdk.ElicitResult{Action: "accept"}, nil
		},
		ProgressNotificationHandler: func(context.Context, *sdk.ProgressNotificationClientRequest) {
			a.progress.Add(1)
			select {
			case a.progressed <- struct{}{}:
			default:
			}
		},
	})
	tr := &sdk.StreamableClientTransport{
		Endpoint:   endpoint,
		HTTPClient: &http.Client{Transport: recordingTripper{a: a, rt: base}},
		MaxRetries: -1,
	}
	cs, err := client.Connect(ctx, tr, &sdk.ClientSessionOptions{ProtocolVersion: a.version})
	if err != nil {
		t.Fatalf("connect %s: %v", a.way, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func (a *agent) lastOutcome() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.outcomes) == 0 {
		return ""
	}
	return a.outcomes[len(a.outcomes)-1]
}

// recordingTripper adds the agent's credential (none for an empty token)
// and records toolguard's
// outcome header of guarded calls.
type recordingTripper struct {
	a  *agent
	rt http.RoundTripper
}

func (r recordingTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	switch {
	case r.a.credHeader != "":
		req.Header.Set(r.a.credHeader, r.a.token)
	case r.a.token != "":
		req.Header.Set("Authorization", "Bearer "+r.a.token)
	}
	resp, err := r.rt.RoundTrip(req)
	if err == nil && resp.Header.Get(HeaderKey) != "" {
		r.a.mu.Lock()
		r.a.outcomes = append(r.a.outcomes, resp.Header.Get(HeaderOutcome))
		r.a.last = resp.Header.Clone()
		r.a.mu.Unlock()
	}
	return resp, err
}

// steps lists every journaled step.
func (p *mcpProxy) steps(t *testing.T) []journal.Step {
	t.Helper()
	sts, err := p.j.List(journal.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	return sts
}
