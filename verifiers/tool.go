package verifiers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolguard/toolguard/rules"
)

// ToolClient calls the tools of MCP servers that lookups and verification
// probes name, each call in a session of its own with the caller's
// credential headers, as any MCP client would.
type ToolClient struct {
	// Transport sends the session's requests; nil means
	// http.DefaultTransport.
	Transport http.RoundTripper
	// Timeout bounds one call, session included; zero means 10s.
	Timeout time.Duration
	// Observe, when set, is told how long each tool call took.
	Observe func(route *rules.Route, tool string, d time.Duration)
}

// ToolResult is a tool's result, as JSON (Raw).
type ToolResult struct {
	IsError bool
	Raw     []byte
}

// errToolRedirect: the server answered a session with a redirect. It is
// not followed, and the answer is unknown.
var errToolRedirect = errors.New("the server answered with a redirect, which a lookup or verification does not follow (the caller's credential goes to the configured endpoint only)")

// Call calls tc, expanded with vals, at target. It returns nil when the
// tool could not be called, and evidence that says what happened.
func (c *ToolClient) Call(ctx context.Context, target *url.URL, creds http.Header, route *rules.Route, tc *rules.ToolCall, vals rules.Values) (*ToolResult, string) {
	args, err := tc.Arguments.Expand(vals)
	if err != nil {
		return nil, fmt.Sprintf("%s: %v", tc.Name, err)
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "toolguard", Version: "1"}, nil)
	tr := &sdk.StreamableClientTransport{
		Endpoint:             target.String(),
		HTTPClient:           sessionClient(c.Transport, creds),
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
	if c.Observe != nil {
		c.Observe(route, tc.Name, time.Since(began))
	}
	if err != nil {
		return nil, fmt.Sprintf("%s: %v", tc.Name, err)
	}
	raw, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Sprintf("%s: %v", tc.Name, err)
	}
	if res.IsError {
		return &ToolResult{IsError: true, Raw: raw}, tc.Name + " returned isError: true: " + firstText(res)
	}
	return &ToolResult{Raw: raw}, tc.Name + " answered"
}

// Probe makes one verification probe of a tool's effect with route's
// verify tool at target: its result meets the expectation (yes), does not
// (no), or the tool could not be called or reported an error (unknown).
func (c *ToolClient) Probe(ctx context.Context, target *url.URL, creds http.Header, route *rules.Route, vals rules.Values) Result {
	vr := route.Verify
	res, evidence := c.Call(ctx, target, creds, route, vr.Request.Tool, vals)
	switch {
	case res == nil || res.IsError:
		return Result{Answer: Unknown, Evidence: evidence}
	case vr.Expect.Match(http.StatusOK, res.Raw):
		return Result{Answer: Yes, Evidence: evidence + ": visible"}
	}
	return Result{Answer: No, Evidence: evidence + ": not as expected"}
}

// sessionClient is the HTTP client of a tool call's session: it sends the
// caller's credential headers with every request and follows no redirect,
// since credentialTripper would attach them to the redirect's target too,
// whatever its origin.
func sessionClient(rt http.RoundTripper, creds http.Header) *http.Client {
	if rt == nil {
		rt = http.DefaultTransport
	}
	return &http.Client{
		Transport: credentialTripper{rt: rt, h: creds},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return errToolRedirect
		},
	}
}

// credentialTripper adds the caller's credential headers to a session's
// requests. It adds them to whatever request it is given: its client must
// not follow redirects (see sessionClient).
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
