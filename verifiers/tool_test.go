package verifiers

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolguard/toolguard/rules"
)

type countIn struct {
	ID string `json:"id"`
}

type countOut struct {
	Count int `json:"count"`
}

// toolServer serves get_thing (count 1 for id th_1, else 0) and broken
// (an error result), recording the Authorization of each request.
func toolServer(t *testing.T) (*url.URL, func() []string) {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "things", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "get_thing"}, func(_ context.Context, _ *sdk.CallToolRequest, in countIn) (*sdk.CallToolResult, countOut, error) {
		if in.ID == "th_1" {
			return nil, countOut{Count: 1}, nil
		}
		return nil, countOut{}, nil
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "broken"}, func(_ context.Context, _ *sdk.CallToolRequest, _ countIn) (*sdk.CallToolResult, countOut, error) {
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "the thing store is down " + strings.Repeat(".", 300)}}}, countOut{}, nil
	})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	var mu sync.Mutex
	var auths []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	u, _ := url.Parse(ts.URL + "/mcp")
	return u, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), auths...)
	}
}

func toolRoute(t *testing.T, tool string) *rules.Route {
	t.Helper()
	api, err := rules.Parse("things.yaml", []byte(`api: things
mcp: {path: /mcp}
tools:
  - name: create_thing
    effect: irreversible
    operation_id: result:structuredContent.id
    verify:
      tool: `+tool+`
      arguments: {id: "{{operation_id}}"}
      expect: {result: {structuredContent.count: 1}}
      within: 5s
`))
	if err != nil {
		t.Fatal(err)
	}
	return api.Tool("create_thing")
}

func TestToolProbe(t *testing.T) {
	target, auths := toolServer(t)
	var observed []string
	c := &ToolClient{Timeout: 5 * time.Second, Observe: func(r *rules.Route, tool string, _ time.Duration) {
		observed = append(observed, r.Name+" "+tool)
	}}
	creds := http.Header{"Authorization": {"Bearer sk_1"}}
	for _, tc := range []struct {
		tool, id string
		want     Answer
		evidence string
	}{
		{"get_thing", "th_1", Yes, "get_thing answered: visible"},
		{"get_thing", "th_2", No, "get_thing answered: not as expected"},
		{"broken", "th_1", Unknown, "broken returned isError: true: the thing store is down"},
		{"missing_tool", "th_1", Unknown, "missing_tool"},
	} {
		res := c.Probe(context.Background(), target, creds, toolRoute(t, tc.tool), rules.Values{OperationID: tc.id})
		if res.Answer != tc.want || !strings.Contains(res.Evidence, tc.evidence) {
			t.Errorf("%s(%s) = %v %q, want %v %q", tc.tool, tc.id, res.Answer, res.Evidence, tc.want, tc.evidence)
		}
	}
	for _, a := range auths() {
		if a != "Bearer sk_1" {
			t.Fatalf("a session request carried Authorization %q, want the caller's", a)
		}
	}
	if len(observed) != 4 || observed[0] != "create_thing get_thing" {
		t.Fatalf("observed %v", observed)
	}
	// A server that cannot be reached is unknown.
	dead, _ := url.Parse("http://127.0.0.1:1/mcp")
	if res := c.Probe(context.Background(), dead, creds, toolRoute(t, "get_thing"), rules.Values{OperationID: "th_1"}); res.Answer != Unknown || !strings.Contains(res.Evidence, "connect") {
		t.Fatalf("unreachable server: %v %q", res.Answer, res.Evidence)
	}
}

// A session's redirect is not followed: the caller's credential goes to
// the configured endpoint only.
func TestToolSessionFollowsNoRedirect(t *testing.T) {
	var leaked sync.Map
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked.Store(r.Header.Get("Authorization"), true)
	}))
	defer elsewhere.Close()
	redirect := httptest.NewServer(http.RedirectHandler(elsewhere.URL, http.StatusTemporaryRedirect))
	defer redirect.Close()
	target, _ := url.Parse(redirect.URL + "/mcp")
	c := &ToolClient{}
	res := c.Probe(context.Background(), target, http.Header{"Authorization": {"Bearer sk_1"}}, toolRoute(t, "get_thing"), rules.Values{OperationID: "th_1"})
	if res.Answer != Unknown {
		t.Fatalf("probe through a redirect: %v", res.Answer)
	}
	if _, ok := leaked.Load("Bearer sk_1"); ok {
		t.Fatal("the caller's credential followed the redirect")
	}
}
