package proxy

import (
	"net/http"
	"net/url"

	"github.com/elazarl/goproxy"

	"github.com/toolguard/toolguard/internal/headerfilter"
	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/problem"
	"github.com/toolguard/toolguard/rules"
)

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
	resp, listing := s.gateway.Handle(req, ep, nil)
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
