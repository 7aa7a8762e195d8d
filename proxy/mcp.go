package proxy

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/toolguard/toolguard/internal/eventstream"
	"github.com/toolguard/toolguard/mcp"
	"github.com/toolguard/toolguard/mcp/servers"
	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/problem"
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
	// was read) and kind what it means.
	answer *mcp.Response
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
		writeResponse(w, s.refuse(r, refusal{problem: problem.New(problem.Rejected, "", fmt.Sprintf("no MCP server %q is configured (mcp.servers)", name))}))
		return true
	}
	if s.modeOf(ep.API) == policy.ModeObserve {
		s.observeMCPGateway(w, r, ep)
		return true
	}
	resp, listing := s.handleMCP(r, ep, ep.URL)
	if resp != nil {
		writeResponse(w, resp)
		return true
	}
	s.mcpPassthrough(w, r, ep, listing)
	return true
}

// writeResponse copies resp to w.
func writeResponse(w http.ResponseWriter, resp *http.Response) {
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	if resp.Body == nil {
		return
	}
	defer resp.Body.Close()
	if !eventstream.Is(resp.Header) {
		_, _ = io.Copy(w, resp.Body)
		return
	}
	// An event stream goes out event by event.
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			_ = rc.Flush()
		}
		if err != nil {
			return
		}
	}
}
