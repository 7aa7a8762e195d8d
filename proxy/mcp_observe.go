package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/elazarl/goproxy"

	"github.com/toolguard/toolguard/internal/headerfilter"
	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/mcp"
	"github.com/toolguard/toolguard/mcp/servers"
	"github.com/toolguard/toolguard/observe"
)

// MCP servers in observe mode (see observe.go): every message is passed on
// untouched, notifications/cancelled included, and a tools/call of a
// guarded tool sent alone is observed. A batch is passed on unobserved,
// and so is a message that cannot be read (enforcement would have refused
// it before it knew the tool).

// observeMCP reads an MCP request of an API in observe mode and starts the
// observation of its tools/call; o is nil when there is none to observe
// (listing is then the id of a tools/list request, whose answer shows
// tool annotations). target is the server's URL; nil means the request's
// own (the forward proxy).
func (s *Server) observeMCP(r *http.Request, ep *servers.Server, target *url.URL) (o *observation, listing json.RawMessage) {
	if r.Method != http.MethodPost {
		return nil, nil
	}
	c := &call{in: r, start: time.Now(), carrier: restCarrier{s}}
	unobserved := func() { s.releaseBody(c) }
	if s.peekBody(c) != observe.PeekWhole {
		unobserved()
		return nil, nil
	}
	msgs, err := mcp.Parse(c.body)
	if err != nil || msgs.Batch || msgs.Calls() != 1 {
		unobserved()
		if err == nil && !msgs.Batch && msgs.Messages[0].Method == "tools/list" {
			return nil, msgs.Messages[0].ID
		}
		return nil, nil
	}
	tc, err := mcp.ParseCall(msgs.Messages[0])
	if err != nil {
		unobserved()
		return nil, nil
	}
	route, guarded := s.gateway.Route(ep, tc.Name)
	if !guarded {
		unobserved()
		return nil, nil
	}
	if target == nil {
		target = r.URL
	}
	in := *r
	in.URL = target
	mc := &mcpCall{s: s, server: ep, tool: tc, target: target}
	c.in, c.route, c.carrier = &in, route, mc
	derive := func() string {
		return s.deriveInto(c, mcpInput(c, mc), "arguments of "+tc.Name+": ")
	}
	return s.newObservation(c, true, derive, func(res result, now time.Time) func(journal.Step) journal.Change {
		return mc.outcome(c, mc.readObserved(res), now)
	}), nil
}

// readObserved reads the server's response to an observed tools/call from
// the first bytes of its answer, as send reads a guarded one's: m's answer
// and kind are set, and the result's body is the JSON-RPC response.
func (m *mcpCall) readObserved(res result) result {
	m.answer, m.raw, m.kind = nil, nil, 0
	if res.err != nil || res.resp == nil || res.resp.StatusCode < 200 || res.resp.StatusCode > 299 {
		return res
	}
	raw, err := mcp.ReadResponse(res.resp.Header.Get("Content-Type"), bytes.NewReader(res.body), m.tool.ID, m.s.opts.MaxStoredResponse)
	if err == nil {
		var ans *mcp.Response
		if ans, err = mcp.ParseResponse(raw); err == nil {
			m.answer, m.raw, m.kind = ans, raw, ans.Classify()
			res.body = raw
			return res
		}
	}
	res.err = fmt.Errorf("read the MCP response: %w", err)
	return res
}

// observeMCPForward passes on a request the forward proxy sees for an MCP
// API in observe mode, with the observation of its tools/call.
func (s *Server) observeMCPForward(req *http.Request, ctx *goproxy.ProxyCtx, ep *servers.Server) (*http.Request, *http.Response) {
	o, listing := s.observeMCP(req, ep, nil)
	headerfilter.StripToolguard(req.Header)
	ctx.UserData = &reqState{mcp: ep, listing: listing, observe: true, observed: o}
	ctx.RoundTripper = passthroughTripper{s}
	if o != nil {
		ctx.RoundTripper = observingTripper{o}
	}
	return req, nil
}

// observeMCPGateway passes on a request of the gateway for a server in
// observe mode, with the observation of its tools/call.
func (s *Server) observeMCPGateway(w http.ResponseWriter, r *http.Request, ep *servers.Server) {
	o, listing := s.observeMCP(r, ep, ep.URL)
	var transport http.RoundTripper = s.upstream
	if o != nil {
		transport = observingTransport{o}
	} else {
		s.metrics.PassedThrough()
	}
	s.gateway.ReverseProxy(ep, listing, transport, false).ServeHTTP(w, r)
}

// observingTransport carries an observed call of the gateway, whose
// reverse proxy answers the errors.
type observingTransport struct{ o *observation }

func (t observingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return t.o.send(req)
}
