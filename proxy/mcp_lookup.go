package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/lifecycle"
	"github.com/toolguard/toolguard/rules"
	"github.com/toolguard/toolguard/verification"
	"github.com/toolguard/toolguard/verifiers"
)

// lookup asks the MCP server, with the lookup tool of the rule,
// whether the step's call took effect, and remembers the answer for the
// step's current fence. It opens a session of its own with the caller's
// credential (in memory only), as any MCP client would.
func (m *mcpCall) lookup(c *call, st *journal.Step) {
	s := m.s
	l := c.route.Lookup
	c.lookupFence = st.Fence
	res, evidence := m.lookupTool(c, st, l)
	c.lookup = lifecycle.LookupUnknown
	c.lookupFound = nil
	switch {
	case res == nil || res.IsError:
	case l.Found.Match(http.StatusOK, res.raw):
		c.lookup = lifecycle.LookupFound
		c.lookupFound = &lifecycle.Found{OperationID: l.OperationID.Extract(nil, res.raw), Evidence: "lookup " + evidence}
	case l.Absent != nil && l.Absent.Match(http.StatusOK, res.raw):
		c.lookup = lifecycle.LookupAbsent
	}
	c.lookupEvidence = "lookup " + evidence
	s.log.Info("lookup", logKey, st.Key, logRoute, c.route.Name, "answer", c.lookup.String(), "evidence", evidence)
}

// toolResult is a lookup tool's result, with its JSON.
type toolResult struct {
	IsError bool
	raw     []byte
}

// lookupTool calls the rule's lookup tool at the call's server.
func (m *mcpCall) lookupTool(c *call, st *journal.Step, l *rules.Lookup) (*toolResult, string) {
	s := m.s
	creds := verifiers.CredentialHeaders(c.route.API, c.in.Header)
	return s.callTool(context.WithoutCancel(c.in.Context()), m.target, creds, c.route, l.Request.Tool, s.values(c, st))
}

// callTool calls a lookup's or verification's tool at target, in a
// session of its own, with the caller's credential headers.
func (s *Server) callTool(ctx context.Context, target *url.URL, creds http.Header, route *rules.Route, tc *rules.ToolCall, vals rules.Values) (*toolResult, string) {
	args, err := tc.Arguments.Expand(vals)
	if err != nil {
		return nil, fmt.Sprintf("%s: %v", tc.Name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.UpstreamTimeout)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "toolguard", Version: "1"}, nil)
	tr := &sdk.StreamableClientTransport{
		Endpoint:             target.String(),
		HTTPClient:           lookupClient(s.trace.Transport(s.upstream), creds),
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
	s.metrics.UpstreamCall(route.API.Name, route.Name+" "+tc.Name, time.Since(began))
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

// mcpProbe makes one verification probe of a tool's effect: its verify
// tool's result meets the expectation (yes), does not (no), or the tool
// could not be called or reported an error (unknown).
func (s *Server) mcpProbe(ctx context.Context, j verification.Job) verifiers.Result {
	vr := j.Route.Verify
	res, evidence := s.callTool(ctx, j.Target, j.Creds, j.Route, vr.Request.Tool, j.Vals)
	switch {
	case res == nil || res.IsError:
		return verifiers.Result{Answer: verifiers.Unknown, Evidence: evidence}
	case vr.Expect.Match(http.StatusOK, res.raw):
		return verifiers.Result{Answer: verifiers.Yes, Evidence: evidence + ": visible"}
	}
	return verifiers.Result{Answer: verifiers.No, Evidence: evidence + ": not as expected"}
}

// errLookupRedirect: the server answered a lookup's or verification's
// session with a redirect. It is not followed, and the answer is unknown.
var errLookupRedirect = errors.New("the server answered with a redirect, which a lookup or verification does not follow (the caller's credential goes to the configured endpoint only)")

// lookupClient is the HTTP client of a lookup's or verification's session:
// it sends the caller's credential headers with every request and follows
// no redirect, since credentialTripper would attach them to the
// redirect's target too, whatever its origin.
func lookupClient(rt http.RoundTripper, creds http.Header) *http.Client {
	return &http.Client{
		Transport: credentialTripper{rt: rt, h: creds},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return errLookupRedirect
		},
	}
}

// credentialTripper adds the caller's credential headers to a lookup's
// requests. It adds them to whatever request it is given: its client must
// not follow redirects (see lookupClient).
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
