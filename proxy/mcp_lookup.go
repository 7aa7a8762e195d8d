package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/rules"
	"github.com/toolguard/toolguard/verifiers"
)

// mcpLookupFor asks the MCP server, with the lookup tool of the rule,
// whether the step's call took effect, and remembers the answer for the
// step's current fence. It opens a session of its own with the caller's
// credential (in memory only), as any MCP client would.
func (s *Server) mcpLookupFor(c *call, st *journal.Step) {
	l := c.route.Lookup
	c.lookupFence = st.Fence
	res, evidence := s.mcpLookup(c, st, l)
	c.lookup = LookupUnknown
	c.lookupFound = nil
	switch {
	case res == nil || res.IsError:
	case l.Found.Match(http.StatusOK, res.raw):
		c.lookup = LookupFound
		c.lookupFound = &lookupResult{operationID: l.OperationID.Extract(nil, res.raw), evidence: "lookup " + evidence}
	case l.Absent != nil && l.Absent.Match(http.StatusOK, res.raw):
		c.lookup = LookupAbsent
	}
	c.lookupEvidence = "lookup " + evidence
	s.log.Info("lookup", logKey, st.Key, logRoute, c.route.Name, "answer", c.lookup.String(), "evidence", evidence)
}

// toolResult is a lookup tool's result, with its JSON.
type toolResult struct {
	IsError bool
	raw     []byte
}

func (s *Server) mcpLookup(c *call, st *journal.Step, l *rules.Lookup) (*toolResult, string) {
	tc := l.Request.Tool
	args, err := tc.Arguments.Expand(s.values(c, st))
	if err != nil {
		return nil, fmt.Sprintf("%s: %v", tc.Name, err)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.in.Context()), s.opts.UpstreamTimeout)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "toolguard-lookup", Version: "1"}, nil)
	tr := &sdk.StreamableClientTransport{
		Endpoint:             c.mcp.target.String(),
		HTTPClient:           &http.Client{Transport: credentialTripper{rt: s.upstream, h: verifiers.CredentialHeaders(c.route.API, c.in.Header)}},
		MaxRetries:           -1,
		DisableStandaloneSSE: true,
	}
	began := time.Now()
	sess, err := client.Connect(ctx, tr, nil)
	if err != nil {
		return nil, fmt.Sprintf("%s: connect: %v", tc.Name, err)
	}
	defer sess.Close()
	res, err := sess.CallTool(ctx, &sdk.CallToolParams{Name: tc.Name, Arguments: json.RawMessage(args)})
	s.metrics.upstreamCall(c.route.API.Name, c.route.Name+" lookup", time.Since(began))
	if err != nil {
		return nil, fmt.Sprintf("%s: %v", tc.Name, err)
	}
	raw, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Sprintf("%s: %v", tc.Name, err)
	}
	if res.IsError {
		return &toolResult{IsError: true, raw: raw}, tc.Name + " returned isError: true: " + firstText(res)
	}
	return &toolResult{raw: raw}, tc.Name + " answered"
}

// credentialTripper adds the caller's credential headers to a lookup's
// requests.
type credentialTripper struct {
	rt http.RoundTripper
	h  http.Header
}

func (t credentialTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, vs := range t.h {
		r.Header[k] = vs
	}
	return t.rt.RoundTrip(r)
}

// firstText is the start of a result's first text content, for evidence.
func firstText(res *sdk.CallToolResult) string {
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			if len(tc.Text) > 200 {
				return tc.Text[:200] + "…"
			}
			return tc.Text
		}
	}
	return ""
}
