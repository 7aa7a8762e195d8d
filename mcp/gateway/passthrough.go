package gateway

import (
	"encoding/json"
	"net/http"
	"net/http/httputil"

	"github.com/toolguard/toolguard/internal/eventstream"
	"github.com/toolguard/toolguard/internal/headerfilter"
	"github.com/toolguard/toolguard/mcp/servers"
	"github.com/toolguard/toolguard/metrics"
	"github.com/toolguard/toolguard/problem"
)

// Passthrough sends a request of the gateway endpoint that is not guarded
// on to ep's server, streaming both ways (SSE included), and marks the
// answer passthrough.
func (g *Gateway) Passthrough(w http.ResponseWriter, r *http.Request, ep *servers.Server, listing json.RawMessage) {
	g.cfg.Metrics.PassedThrough()
	g.ReverseProxy(ep, listing, g.cfg.Upstream, true).ServeHTTP(w, r)
}

// ReverseProxy sends a request of the gateway endpoint on to ep's server
// through transport, streaming both ways; mark sets Toolguard-Outcome:
// passthrough on the answer. listing is the id of a tools/list request,
// whose answer shows the tools' annotations (see servers.Server.Listed).
func (g *Gateway) ReverseProxy(ep *servers.Server, listing json.RawMessage, transport http.RoundTripper, mark bool) *httputil.ReverseProxy {
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
				resp.Header.Set(headerOutcome, metrics.OutcomePassthrough)
			}
			ep.Listed(resp, listing)
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			p := problem.New(problem.UpstreamUnreachable, "", "MCP server "+ep.API.Name+" unreachable: "+err.Error())
			eventstream.Copy(w, g.cfg.Pipeline.Problem(r, p))
		},
	}
}
