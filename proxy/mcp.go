package proxy

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/toolguard/toolguard/mcp"
	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/problem"
	"github.com/toolguard/toolguard/rules"
)

// MCPServer is an MCP server the proxy serves on its own listener at
// /mcp/{Name} (the gateway endpoint), for agents whose MCP client does not
// honour proxy variables.
type MCPServer struct {
	// Name is the last segment of the gateway path.
	Name string
	// URL is the server's Streamable HTTP endpoint.
	URL *url.URL
	// API is the rule file that describes the server's tools; nil means
	// none, so that every tool follows the unlisted policy.
	API *rules.API
}

// mcpCall is the MCP side of a guarded call: the tools/call, and what the
// server answered.
type mcpCall struct {
	s      *Server
	server *mcpEndpoint
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

// mcpEndpoint is one MCP server as the proxy sees it: through the gateway
// (with a fixed upstream URL) or through the forward proxy (the request's
// URL).
type mcpEndpoint struct {
	api *rules.API
	// url is the upstream of a gateway endpoint; nil for the forward proxy.
	url *url.URL
	// tools remembers the annotations of the tools a tools/list showed.
	tools annotations
	// inflight holds the guarded calls in flight, by session and id.
	inflight sync.Map // inflightKey → struct{}
	// unlisted caches the routes of tools no rule names, up to
	// maxUnlistedRoutes of them (unlistedN counts the attempts).
	unlisted  sync.Map // tool name → *rules.Route
	unlistedN atomic.Int64
}

// mcpEndpoints indexes the gateway's servers by name, and the forward
// proxy's MCP APIs by API.
type mcpEndpoints struct {
	byName map[string]*mcpEndpoint
	mu     sync.Mutex
	byAPI  map[*rules.API]*mcpEndpoint
}

func newMCPEndpoints(servers []MCPServer, unlisted Credential) *mcpEndpoints {
	e := &mcpEndpoints{byName: make(map[string]*mcpEndpoint), byAPI: make(map[*rules.API]*mcpEndpoint)}
	for _, sv := range servers {
		api := sv.API
		if api == nil || api.MCP == nil {
			api = unlisted.api(sv.Name)
			api.MCP = &rules.MCP{Path: "/mcp"}
		}
		// The server's name partitions the key space: keys of two servers
		// never meet, whatever rule file they share.
		named := *api
		named.Name = sv.Name
		tools := make(map[string]*rules.Route, len(api.MCP.Tools))
		m := *api.MCP
		m.Tools = tools
		named.MCP = &m
		for n, r := range api.MCP.Tools {
			rr := *r
			rr.API = &named
			tools[n] = &rr
		}
		e.byName[sv.Name] = &mcpEndpoint{api: &named, url: sv.URL}
	}
	return e
}

// forAPI is the endpoint of an MCP API that the forward proxy reaches.
func (e *mcpEndpoints) forAPI(api *rules.API) *mcpEndpoint {
	e.mu.Lock()
	defer e.mu.Unlock()
	ep := e.byAPI[api]
	if ep == nil {
		ep = &mcpEndpoint{api: api}
		e.byAPI[api] = ep
	}
	return ep
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
	ep := s.mcp.byName[name]
	if ep == nil {
		writeResponse(w, s.refuse(r, refusal{problem: problem.New(problem.Rejected, "", fmt.Sprintf("no MCP server %q is configured (mcp.servers)", name))}))
		return true
	}
	if s.modeOf(ep.api) == policy.ModeObserve {
		s.observeMCPGateway(w, r, ep)
		return true
	}
	resp, listing := s.handleMCP(r, ep, ep.url)
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
	if !isEventStream(resp.Header) {
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

// inflightKey names a request of a caller's session in
// mcpEndpoint.inflight. Stateless clients share the empty session, so the
// caller's credential (in memory only, for the call's lifetime) keeps one
// client's cancellation from touching another's call.
func inflightKey(r *http.Request, id json.RawMessage) string {
	return r.Header.Get("Mcp-Session-Id") + "\x00" + r.Header.Get("Authorization") + "\x00" + string(id)
}
