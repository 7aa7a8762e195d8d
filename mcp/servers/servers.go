package servers

import (
	"encoding/json"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"

	"github.com/toolguard/toolguard/mcp"
	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/rules"
)

// Gateway is an MCP server of the gateway, served at /mcp/{Name}.
type Gateway struct {
	// Name is the last segment of the gateway path, and the name of the
	// server's API: it partitions the key space.
	Name string
	// URL is the server's Streamable HTTP endpoint.
	URL *url.URL
	// API is the rule file that describes the server's tools; nil means
	// none, so that every tool follows the unlisted policy.
	API *rules.API
}

// Server is one MCP server as the proxy sees it: through the gateway
// (with a fixed upstream URL) or through the forward proxy (the request's
// URL).
type Server struct {
	// API is the server's rule file (for the gateway: named for the
	// server, with its own copy of the tools' routes).
	API *rules.API
	// URL is the upstream of a gateway server; nil for the forward proxy.
	URL *url.URL
	// tools remembers the annotations of the tools a tools/list showed.
	tools annotations
	// inflight holds the guarded calls in flight, by session and id.
	inflight sync.Map // inflightKey → struct{}
	// unlisted caches the routes of tools no rule names, up to
	// maxUnlistedRoutes of them (unlistedN counts the attempts).
	unlisted  sync.Map // tool name → *rules.Route
	unlistedN atomic.Int64
}

// Set indexes the gateway's servers by name, and the forward proxy's MCP
// APIs by API.
type Set struct {
	byName map[string]*Server
	mu     sync.Mutex
	byAPI  map[*rules.API]*Server
}

// NewSet is the servers of the gateway; unlisted is the API of a server
// without a rule file (its callers' credential, named for the server).
func NewSet(gateway []Gateway, unlisted func(name string) *rules.API) *Set {
	e := &Set{byName: make(map[string]*Server), byAPI: make(map[*rules.API]*Server)}
	for _, sv := range gateway {
		api := sv.API
		if api == nil || api.MCP == nil {
			api = unlisted(sv.Name)
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
		e.byName[sv.Name] = &Server{API: &named, URL: sv.URL}
	}
	return e
}

// Named is the gateway's server name; nil when there is none.
func (e *Set) Named(name string) *Server { return e.byName[name] }

// ForAPI is the server of an MCP API that the forward proxy reaches.
func (e *Set) ForAPI(api *rules.API) *Server {
	e.mu.Lock()
	defer e.mu.Unlock()
	sv := e.byAPI[api]
	if sv == nil {
		sv = &Server{API: api}
		e.byAPI[api] = sv
	}
	return sv
}

// Policy is the operator's choice for tools no rule names.
type Policy struct {
	// Unlisted is the policy of tools no rule names (mcp.unlisted).
	Unlisted policy.Unlisted
	// TrustAnnotations lets a tool that tools/list marks read-only pass
	// (mcp.trust_annotations).
	TrustAnnotations bool
}

// Route is the route a tool is guarded by, and whether it is guarded at
// all: the tool's rule, else the unlisted policy p, which the tool's
// annotations may tighten and, where the operator trusts them, loosen for
// read-only tools.
func (sv *Server) Route(tool string, p Policy) (*rules.Route, bool) {
	if r := sv.API.Tool(tool); r != nil {
		return r, r.Effect != rules.EffectSafe
	}
	ann := sv.tools.get(tool)
	guard := p.Unlisted != policy.UnlistedPass || ann.destructive()
	if guard && p.TrustAnnotations && ann.readOnly() {
		guard = false
	}
	if !guard {
		return nil, false
	}
	if r, ok := sv.unlisted.Load(tool); ok {
		return r.(*rules.Route), true
	}
	r := &rules.Route{API: sv.API, Name: tool, Method: http.MethodPost, Pattern: sv.API.MCP.Path, Effect: rules.EffectIrreversible}
	if sv.unlistedN.Add(1) <= maxUnlistedRoutes { // agents choose tool names: bound the cache
		sv.unlisted.Store(tool, r)
	}
	return r, true
}

// maxUnlistedRoutes bounds the routes of unlisted tools cached per server.
const maxUnlistedRoutes = 1024

// Listed reads the annotations of a tools/list answer (the request with
// id) as it streams by to the agent; nil id reads nothing.
func (sv *Server) Listed(resp *http.Response, id json.RawMessage) { sv.tools.observe(resp, id) }

// Begin records the guarded call with id, sent in r, as in flight until
// the returned function is called.
func (sv *Server) Begin(r *http.Request, id json.RawMessage) (end func()) {
	key := inflightKey(r, id)
	sv.inflight.Store(key, struct{}{})
	return func() { sv.inflight.Delete(key) }
}

// CancelsGuardedCall reports whether msgs is a notifications/cancelled for
// a guarded call in flight in the same session. Such a notification is not
// passed on: toolguard owns that request now, and a cancelled tool would
// leave its effect unknown.
func (sv *Server) CancelsGuardedCall(r *http.Request, msgs mcp.Body) bool {
	if msgs.Batch || msgs.Messages[0].Method != "notifications/cancelled" {
		return false
	}
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(msgs.Messages[0].Params, &p) != nil || p.RequestID == nil {
		return false
	}
	_, ok := sv.inflight.Load(inflightKey(r, p.RequestID))
	return ok
}

// inflightKey names a request of a caller's session in Server.inflight.
// Stateless clients share the empty session, so the caller's credential
// (in memory only, for the call's lifetime) keeps one client's
// cancellation from touching another's call.
func inflightKey(r *http.Request, id json.RawMessage) string {
	return r.Header.Get("Mcp-Session-Id") + "\x00" + r.Header.Get("Authorization") + "\x00" + string(id)
}
