package proxy

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/toolguard/toolguard/internal/eventstream"
	"github.com/toolguard/toolguard/mcp"
	"github.com/toolguard/toolguard/mcp/gateway"
	"github.com/toolguard/toolguard/mcp/servers"
	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/problem"
	"github.com/toolguard/toolguard/rules"
)

// MCPServer is an MCP server the proxy serves on its own listener at
// /mcp/{Name} (the gateway endpoint), for agents whose MCP client does not
// honour proxy variables.
type MCPServer = servers.Gateway

// mcpCall is the MCP side of a guarded call: the tools/call, and what the
// server answered.
type mcpCall struct {
	s      *Server
	server *servers.Server
	tool   *mcp.Call
	// target is the server's endpoint the call is sent to.
	target *url.URL
	// answer is the server's response to the last attempt (nil when none
	// was read), raw the message it was parsed from and kind what it means.
	answer *mcp.Response
	raw    []byte
	kind   mcp.Outcome
	// relay, when set, receives the server's messages before its response
	// (see guardMCPStreaming).
	relay func(data []byte)
}

// gatewayPrefix is where the proxy listener serves MCP servers.
const gatewayPrefix = "/mcp/"

// serveMCP serves the gateway endpoint /mcp/{name}; it reports false for
// any other path.
func (s *Server) serveMCP(w http.ResponseWriter, r *http.Request) bool {
	name, ok := strings.CutPrefix(r.URL.Path, gatewayPrefix)
	if !ok {
		return false
	}
	ep := s.mcp.Named(name)
	if ep == nil {
		eventstream.Copy(w, s.refuse(r, refusal{problem: problem.New(problem.Rejected, "", fmt.Sprintf("no MCP server %q is configured (mcp.servers)", name))}))
		return true
	}
	if s.modeOf(ep.API) == policy.ModeObserve {
		s.observeMCPGateway(w, r, ep)
		return true
	}
	answered, listing := s.gateway.Serve(w, r, ep, ep.URL)
	if !answered {
		s.gateway.Passthrough(w, r, ep, listing)
	}
	return true
}

// mcpPipeline is the guard pipeline as the MCP gateway (package
// mcp/gateway) reaches it.
type mcpPipeline struct{ s *Server }

var _ gateway.Pipeline = mcpPipeline{}

// ReadBody reads a message within the body budget, as a guarded call's
// body is read.
func (p mcpPipeline) ReadBody(r *http.Request) ([]byte, func(), *http.Response) {
	s := p.s
	c := &call{in: r, start: time.Now(), carrier: restCarrier{s}}
	if a := s.readBody(c); a != nil {
		s.releaseBody(c)
		return nil, nil, a.resp
	}
	return c.body, func() { s.releaseBody(c) }, nil
}

// Guard runs a tools/call through the pipeline, with the MCP carrier.
func (p mcpPipeline) Guard(t gateway.Tool, relay func(key string, msg []byte)) *http.Response {
	s := p.s
	c := &call{in: s.trace.Tool(t.In, t.Route, t.Message, t.Call), route: t.Route, body: t.Message.Raw, start: t.Start}
	m := &mcpCall{s: s, server: t.Server, tool: t.Call, target: t.Target}
	if relay != nil {
		m.relay = func(msg []byte) { relay(c.intent.Key, msg) }
	}
	c.carrier = m
	return s.guardMCP(c, m)
}

// Problem answers with p in RFC 9457's format.
func (p mcpPipeline) Problem(r *http.Request, d *problem.Details) *http.Response {
	return problemResponse(r, rules.ErrorFormat{}, d)
}

// newGateway builds the MCP gateway over the pipeline.
func (s *Server) newGateway() *gateway.Gateway {
	o := s.opts
	return gateway.New(gateway.Config{
		Pipeline:        mcpPipeline{s},
		Upstream:        s.upstream,
		Policy:          servers.Policy{Unlisted: o.MCPUnlisted, TrustAnnotations: o.MCPTrustAnnotations},
		UpstreamTimeout: o.UpstreamTimeout, MaxResponse: o.MaxStoredResponse,
		Metrics: s.metrics, Log: s.log,
		CancelHeld: func() {
			if s.cancelHeld != nil {
				s.cancelHeld()
			}
		},
	})
}
