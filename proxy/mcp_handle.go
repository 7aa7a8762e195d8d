package proxy

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"

	"github.com/elazarl/goproxy"

	"github.com/toolguard/toolguard/internal/eventstream"
	"github.com/toolguard/toolguard/internal/headerfilter"
	"github.com/toolguard/toolguard/mcp"
	"github.com/toolguard/toolguard/mcp/servers"
	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/problem"
	"github.com/toolguard/toolguard/rules"
)

// handleMCP reads a message sent to an MCP endpoint and guards it when it
// is a tools/call of a guarded tool. It returns the answer, or nil when the
// request passes through (its body, if read, is restored; listing is then
// the id of a tools/list request, whose answer shows tool annotations).
// target is the server's URL; nil means the request's own (the forward
// proxy).
func (s *Server) handleMCP(r *http.Request, ep *servers.Server, target *url.URL) (resp *http.Response, listing json.RawMessage) {
	if r.Method != http.MethodPost {
		return nil, nil
	}
	c := &call{in: r, start: time.Now(), carrier: restCarrier{s}}
	defer s.releaseBody(c)
	msgs, resp := s.readMessages(c)
	if resp != nil {
		return resp, nil
	}
	return s.dispatchMCP(c, ep, target, msgs)
}

// readMessages reads and parses c's body within the body budget, and puts
// it back for a passthrough; a refusal is the answer to send instead.
func (s *Server) readMessages(c *call) (mcp.Body, *http.Response) {
	r := c.in
	if a := s.readBody(c); a != nil {
		if a.resp.StatusCode == http.StatusRequestEntityTooLarge {
			return mcp.Body{}, rpcError(r, http.StatusRequestEntityTooLarge, nil, mcp.CodeInvalidRequest,
				"toolguard: the message exceeds limits.max_body; nothing was sent")
		}
		return mcp.Body{}, a.resp // too slow (408), no room (503): nothing was sent
	}
	body := c.body
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	msgs, err := mcp.Parse(body)
	if err != nil {
		s.metrics.Reject("invalid_body")
		return mcp.Body{}, rpcError(r, http.StatusBadRequest, nil, mcp.Code(err), "toolguard: "+err.Error())
	}
	return msgs, nil
}

// dispatchMCP guards the tools/call of msgs, refuses a batch that mixes
// them with other messages, and lets everything else pass.
func (s *Server) dispatchMCP(c *call, ep *servers.Server, target *url.URL, msgs mcp.Body) (*http.Response, json.RawMessage) {
	r := c.in
	switch n := msgs.Calls(); {
	case n == 0:
		if ep.CancelsGuardedCall(r, msgs) {
			s.log.Info("notifications/cancelled held back: the guarded call runs to its outcome", slog.String(logAPI, ep.API.Name))
			if s.cancelHeld != nil {
				s.cancelHeld()
			}
			return bodyResponse(r, http.StatusAccepted, http.Header{}, nil), nil
		}
		if m := msgs.Messages[0]; !msgs.Batch && m.Method == "tools/list" {
			return nil, m.ID
		}
		return nil, nil
	case msgs.Batch && n < len(msgs.Messages):
		s.metrics.Reject("invalid_body")
		return rpcError(r, http.StatusBadRequest, nil, mcp.CodeInvalidRequest,
			"toolguard: a batch that mixes tools/call with other messages is not accepted; send the tools/call requests in a batch of their own, or one per POST"), nil
	case msgs.Batch:
		return s.mcpBatch(r, ep, target, msgs), nil
	}
	resp, pass := s.mcpCallOne(r, ep, target, c, msgs.Messages[0], true)
	if pass {
		return nil, nil
	}
	return resp, nil
}

// mcpCallOne guards one tools/call message m, sent in r; c holds the body
// budget's reservation. pass reports a tool that is not guarded. With
// stream, an agent that accepts an event stream gets the server's messages
// before the response relayed as they come (see guardMCPStreaming).
func (s *Server) mcpCallOne(r *http.Request, ep *servers.Server, target *url.URL, c *call, m mcp.Message, stream bool) (resp *http.Response, pass bool) {
	tc, err := mcp.ParseCall(m)
	if err != nil {
		s.metrics.Reject("invalid_body")
		return rpcError(r, http.StatusOK, m.ID, mcp.Code(err), "toolguard: "+err.Error()), false
	}
	route, guarded := s.mcpRoute(ep, tc.Name)
	if !guarded {
		return nil, true
	}
	if target == nil {
		target = r.URL
	}
	in := *r
	in.URL = target
	c.in, c.route, c.body = &in, route, m.Raw
	c.in = s.trace.Tool(c.in, route, m, tc)
	mc := &mcpCall{s: s, server: ep, tool: tc, target: target}
	c.carrier = mc
	end := ep.Begin(r, tc.ID)
	if stream && eventstream.Accepted(r.Header) {
		return s.guardMCPStreaming(c, mc, end), false
	}
	defer end()
	return s.guardMCP(c, mc), false
}

// rpcError answers with a JSON-RPC error; nothing was sent or journaled.
func rpcError(r *http.Request, status int, id json.RawMessage, code int, msg string) *http.Response {
	h := http.Header{"Content-Type": {"application/json"}}
	h.Set(HeaderOutcome, OutcomeBlocked)
	return bodyResponse(r, status, h, mcp.ErrorResponse(id, code, msg))
}

// mcpRoute is the route a tool of ep is guarded by, and whether it is
// guarded at all, under the options' policy for tools no rule names.
func (s *Server) mcpRoute(ep *servers.Server, tool string) (*rules.Route, bool) {
	return ep.Route(tool, servers.Policy{Unlisted: s.opts.MCPUnlisted, TrustAnnotations: s.opts.MCPTrustAnnotations})
}

// routeLabel is the route label of c's metrics: a tool that no rule
// names counts as "unlisted", since agents choose tool names and labels
// must stay few.
func (m *mcpCall) routeLabel(c *call) string {
	if c.route.API.Tool(c.route.Name) != c.route {
		return "unlisted"
	}
	return c.route.Name
}

// verifyTarget is the server's endpoint: a tool's verification is a tool
// call to the same server.
func (m *mcpCall) verifyTarget() *url.URL { return m.target }

// legacyKeys: MCP keys have had one form only.
func (m *mcpCall) legacyKeys() bool { return false }

// guardMCP runs a tools/call through the pipeline.
func (s *Server) guardMCP(c *call, m *mcpCall) *http.Response {
	return s.admit(c, func(c *call) *answer { return s.prepareMCP(c, m) })
}

// prepareMCP derives the key of a tools/call from its tool and arguments.
func (s *Server) prepareMCP(c *call, m *mcpCall) *answer {
	in := mcpInput(c, m)
	if in.Credential == "" {
		if a := s.refuseNoCredential(c); a != nil {
			return a
		}
	}
	intent, err := s.deriver.Derive(c.route, in)
	if err != nil {
		s.metrics.Reject("invalid_body")
		return s.problem(c, problem.New(problem.InvalidBody, "", "arguments of "+m.tool.Name+": "+err.Error()))
	}
	c.intent, c.input = intent, in
	c.callerMAC = s.credentialMAC(c.route.API, c.in.Header)
	s.parked.Lend(c.callerMAC, c.route.API, c.in.Header)
	return nil
}

// mcpInput is what a tools/call's intent is derived from: its arguments
// and scope values.
func mcpInput(c *call, m *mcpCall) rules.Input {
	return rules.Input{
		ContentType: "application/json",
		Body:        m.tool.Arguments,
		Workflow:    c.in.Header.Get(HeaderWorkflow),
		Credential:  c.route.API.CallerCredential(c.in.Header),
	}
}

// handleMCPForward handles a request the forward proxy sees for an MCP
// API's endpoint.
func (s *Server) handleMCPForward(req *http.Request, ctx *goproxy.ProxyCtx, api *rules.API) (*http.Request, *http.Response) {
	ep := s.mcp.ForAPI(api)
	if s.modeOf(ep.API) == policy.ModeObserve {
		return s.observeMCPForward(req, ctx, ep)
	}
	resp, listing := s.handleMCP(req, ep, nil)
	if resp != nil {
		ctx.UserData = &reqState{decided: true}
		return req, resp
	}
	headerfilter.StripToolguard(req.Header)
	ctx.UserData = &reqState{mcp: ep, listing: listing}
	req = s.tracePassthrough(req, ctx)
	ctx.RoundTripper = passthroughTripper{s}
	return req, nil
}

// mcpPassthrough sends a request of the gateway that is not guarded on to
// the server, streaming both ways (SSE included).
func (s *Server) mcpPassthrough(w http.ResponseWriter, r *http.Request, ep *servers.Server, listing json.RawMessage) {
	s.metrics.PassedThrough()
	s.mcpReverseProxy(ep, listing, s.upstream, true).ServeHTTP(w, r)
}

// mcpReverseProxy sends a request of the gateway on to ep's server
// through transport, streaming both ways; mark sets Toolguard-Outcome:
// passthrough on the answer.
func (s *Server) mcpReverseProxy(ep *servers.Server, listing json.RawMessage, transport http.RoundTripper, mark bool) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			u := *ep.URL
			pr.Out.URL = &u
			pr.Out.Host = ""
			headerfilter.StripToolguard(pr.Out.Header)
		},
		Transport:     transport,
		FlushInterval: -1,
		ModifyResponse: func(resp *http.Response) error {
			headerfilter.StripToolguard(resp.Header)
			if mark {
				resp.Header.Set(HeaderOutcome, OutcomePassthrough)
			}
			ep.Listed(resp, listing)
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			writeResponse(w, problemResponse(r, rules.ErrorFormat{}, problem.New(problem.UpstreamUnreachable, "", "MCP server "+ep.API.Name+" unreachable: "+err.Error())))
		},
	}
}
