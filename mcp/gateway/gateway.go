package gateway

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/toolguard/toolguard/internal/eventstream"
	"github.com/toolguard/toolguard/mcp"
	"github.com/toolguard/toolguard/mcp/servers"
	"github.com/toolguard/toolguard/metrics"
	"github.com/toolguard/toolguard/problem"
	"github.com/toolguard/toolguard/rules"
)

// The contract's response header and outcomes (proxy.HeaderKey,
// proxy.HeaderOutcome) on the answers the gateway makes itself.
const (
	headerKey     = "Toolguard-Key"
	headerOutcome = "Toolguard-Outcome"
)

// Pipeline is what the gateway needs of the guard pipeline.
type Pipeline interface {
	// ReadBody reads r's body within the body budget. refused is the
	// answer to a body that cannot be read (too slow, no room; status 413
	// when it is too large): nothing was sent. release gives the body's
	// room back.
	ReadBody(r *http.Request) (body []byte, release func(), refused *http.Response)
	// Guard runs one tools/call of a guarded tool through the pipeline
	// and returns its answer, a JSON-RPC response. relay, when not nil,
	// receives each message the server sends before its response, with
	// the call's key, on Guard's goroutine before Guard returns.
	Guard(t Tool, relay func(key string, msg []byte)) *http.Response
	// Problem answers r with p, nothing sent.
	Problem(r *http.Request, p *problem.Details) *http.Response
}

// Tool is one tools/call of a guarded tool.
type Tool struct {
	// In is the agent's request, addressed to Target.
	In     *http.Request
	Server *servers.Server
	// Target is the server's endpoint.
	Target  *url.URL
	Route   *rules.Route
	Message mcp.Message
	Call    *mcp.Call
	// Start is when the agent's request arrived.
	Start time.Time
}

// Config is what a Gateway works with.
type Config struct {
	Pipeline Pipeline
	// Upstream carries the messages that pass through to the servers.
	Upstream http.RoundTripper
	// Policy is the policy for tools no rule names.
	Policy servers.Policy
	// UpstreamTimeout bounds a relayed message of a batch; MaxResponse
	// bounds its response.
	UpstreamTimeout time.Duration
	MaxResponse     int64
	// Metrics counts refused and passed-through messages; nil counts none.
	Metrics *metrics.Metrics
	Log     *slog.Logger
	// CancelHeld, when set (tests), runs when a notifications/cancelled
	// for a guarded call is held back.
	CancelHeld func()
}

// Gateway guards the tools/call messages sent to MCP servers.
type Gateway struct {
	cfg Config
}

// New returns a Gateway.
func New(cfg Config) *Gateway {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Gateway{cfg: cfg}
}

// Route is the route a tool of ep is guarded by, and whether it is guarded
// at all, under the policy for tools no rule names.
func (g *Gateway) Route(ep *servers.Server, tool string) (*rules.Route, bool) {
	return ep.Route(tool, g.cfg.Policy)
}

// Handle reads a message sent to an MCP endpoint and guards it when it is
// a tools/call of a guarded tool. It returns the answer, or nil when the
// request passes through (its body, if read, is restored; listing is then
// the id of a tools/list request, whose answer shows tool annotations).
// target is the server's URL; nil means the request's own (the forward
// proxy). A streamed answer is relayed through a pipe by a goroutine of
// its own (see streaming).
func (g *Gateway) Handle(r *http.Request, ep *servers.Server, target *url.URL) (resp *http.Response, listing json.RawMessage) {
	resp, listing, _ = g.handle(nil, r, ep, target)
	return resp, listing
}

// Serve is Handle for a caller that owns the answer's writer, the gateway
// endpoint: the answer is written to w, a streamed one by the goroutine
// that guards the call, with no goroutine or pipe in between (see
// streamTo). It reports false when the request passes through, with
// listing as Handle's.
func (g *Gateway) Serve(w http.ResponseWriter, r *http.Request, ep *servers.Server, target *url.URL) (answered bool, listing json.RawMessage) {
	resp, listing, wrote := g.handle(w, r, ep, target)
	switch {
	case wrote:
		return true, nil
	case resp == nil:
		return false, listing
	}
	eventstream.Copy(w, resp)
	return true, nil
}

// handle is Handle, and Serve when w is set; wrote reports an answer
// already written to w.
func (g *Gateway) handle(w http.ResponseWriter, r *http.Request, ep *servers.Server, target *url.URL) (resp *http.Response, listing json.RawMessage, wrote bool) {
	if r.Method != http.MethodPost {
		return nil, nil, false
	}
	start := time.Now()
	msgs, release, resp := g.readMessages(r)
	if resp != nil {
		return resp, nil, false
	}
	owned := false // a streamed answer gives the body's room back itself
	defer func() {
		if !owned {
			release()
		}
	}()
	if target == nil {
		target = r.URL
	}
	d := dispatch{g: g, r: r, w: w, ep: ep, target: target, start: start, release: release}
	resp, listing = d.run(msgs)
	owned = d.owned
	return resp, listing, d.wrote
}
