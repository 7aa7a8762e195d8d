package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/rules"
)

// fakeGitHub serves create_issue and search_issues the way GitHub's MCP
// server does: the issue and the search result as JSON text content.
type fakeGitHub struct {
	mu     sync.Mutex
	issues []string // titles
}

type issueArgs struct {
	Owner string `json:"owner"`
	Repo  string `json:"repo"`
	Title string `json:"title"`
	Body  string `json:"body,omitempty"`
}

type searchArgs struct {
	Query string `json:"query"`
}

func textResult(v any) *sdk.CallToolResult {
	b, _ := json.Marshal(v)
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}}
}

func (g *fakeGitHub) serve(t *testing.T) *url.URL {
	srv := sdk.NewServer(&sdk.Implementation{Name: "github", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "create_issue"}, func(_ context.Context, _ *sdk.CallToolRequest, in issueArgs) (*sdk.CallToolResult, any, error) {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.issues = append(g.issues, in.Title)
		n := len(g.issues)
		return textResult(map[string]any{"number": n, "html_url": fmt.Sprintf("https://github.com/%s/%s/issues/%d", in.Owner, in.Repo, n)}), nil, nil
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "search_issues"}, func(_ context.Context, _ *sdk.CallToolRequest, in searchArgs) (*sdk.CallToolResult, any, error) {
		g.mu.Lock()
		defer g.mu.Unlock()
		var items []map[string]any
		for i, title := range g.issues {
			if strings.Contains(in.Query, `in:title "`+title+`"`) && strings.Contains(in.Query, "repo:acme/web ") {
				items = append(items, map[string]any{"number": i + 1, "html_url": fmt.Sprintf("https://github.com/acme/web/issues/%d", i+1)})
			}
		}
		return textResult(map[string]any{"total_count": len(items), "items": items}), nil, nil
	})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	u, _ := url.Parse(hs.URL + "/mcp/")
	return u
}

// The example rule file for GitHub's MCP server works as written: its
// operation id and its search_issues lookup read the JSON text GitHub's
// server answers with.
func TestMCPExampleGitHub(t *testing.T) {
	data, err := os.ReadFile("../examples/rules/mcp-github.yaml")
	if err != nil {
		t.Fatal(err)
	}
	api, err := rules.Parse("mcp-github.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	g := &fakeGitHub{}
	p := startMCPProxy(t, Options{MCPServers: []MCPServer{{Name: "github", URL: g.serve(t), API: api}}})
	ctx := context.Background()
	session := func() *sdk.ClientSession {
		tr := &sdk.StreamableClientTransport{Endpoint: p.proxy.String() + "/mcp/github", MaxRetries: -1,
			HTTPClient: &http.Client{Transport: credentialed{http.DefaultTransport}}}
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx, tr, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	call := &sdk.CallToolParams{Name: "create_issue", Arguments: issueArgs{Owner: "acme", Repo: "web", Title: "Login broken", Body: "500 on /login"}}
	if _, err := session().CallTool(ctx, call); err != nil {
		t.Fatal(err)
	}
	sts := p.steps(t)
	if len(sts) != 1 || sts[0].OperationID != "https://github.com/acme/web/issues/1" {
		t.Fatalf("steps = %+v, want one with the issue's URL as operation id", sts)
	}
	// The answer was lost (a crash before the outcome write).
	if _, err := p.j.Apply(ctx, sts[0].Key, func(cur *journal.Step) (journal.Change, error) {
		st := *cur
		st.Status, st.Response, st.OperationID = journal.StatusStarted, nil, ""
		return journal.Change{Step: st, Event: "test", Reason: "simulated crash before the outcome write"}, nil
	}); err != nil {
		t.Fatal(err)
	}
	p.srv.now = func() time.Time { return time.Now().Add(time.Hour) } // settled
	res, err := session().CallTool(ctx, call)
	if err != nil || res.IsError {
		t.Fatalf("retry: %+v, %v", res, err)
	}
	if text := res.Content[0].(*sdk.TextContent).Text; !strings.Contains(text, "issues/1") {
		t.Errorf("recovered answer %q does not name the issue found", text)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.issues) != 1 {
		t.Errorf("issues created = %d, want 1", len(g.issues))
	}
}
