package proxy

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/lifecycle"
	"github.com/toolguard/toolguard/problem"
)

// Regression: the sessions of MCP lookups and verifications followed
// redirects and added the caller's credential on every hop, so that a
// server answering 307 delivered the caller's Authorization header to
// another host. They follow no redirect: a redirect is an unknown answer,
// and the redirect's target is never contacted.
func TestMCPLookupSessionRedirect(t *testing.T) {
	tests := []struct {
		name string
		way  way
		// run makes the call whose lookup or verification asks
		// find_ticket, and checks what the caller was answered.
		run func(t *testing.T, p *mcpProxy, a *agent)
	}{
		{name: "lookup, gateway", way: viaGateway, run: lookupAfterLostAnswer},
		{name: "lookup, forward proxy", way: viaForward, run: lookupAfterLostAnswer},
		{name: "verification, gateway", way: viaGateway, run: verifyHidden},
		{name: "verification, forward proxy", way: viaForward, run: verifyHidden},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			elsewhere := newCredentialSink(t)
			ts := newTicketServer(t)
			redirectTool(t, ts, "find_ticket", elsewhere.url)
			p := newMCPProxy(t, ts, Options{})
			tc.run(t, p, p.agent(tc.way, "alice"))
			if n, auth := elsewhere.seen(); n != 0 {
				t.Errorf("the redirect's target was contacted %d times (Authorization %q), want never", n, auth)
			}
			if n := ts.created.Load(); n != 1 {
				t.Errorf("effects = %d, want 1", n)
			}
		})
	}
}

// lookupAfterLostAnswer makes a create_ticket call whose outcome was lost,
// then retries it, so that its lookup (find_ticket) runs: redirected, its
// answer is unknown and the step is held for review.
func lookupAfterLostAnswer(t *testing.T, p *mcpProxy, a *agent) {
	t.Helper()
	ctx := context.Background()
	if _, err := a.session(t, ctx).CallTool(ctx, &sdk.CallToolParams{Name: "create_ticket", Arguments: callArgs("ops", "Lost")}); err != nil {
		t.Fatal(err)
	}
	st := p.steps(t)[0]
	if _, err := p.j.Apply(ctx, st.Key, func(cur *journal.Step) (journal.Change, error) {
		next := *cur
		next.Status, next.Response, next.OperationID = journal.StatusStarted, nil, ""
		return journal.Change{Step: next, Event: "test", Reason: "simulated crash before the outcome write"}, nil
	}); err != nil {
		t.Fatal(err)
	}
	p.srv.now = func() time.Time { return time.Now().Add(time.Hour) } // the attempt has settled
	res, err := a.session(t, ctx).CallTool(ctx, &sdk.CallToolParams{Name: "create_ticket", Arguments: callArgs("ops", "Lost")})
	if err != nil {
		t.Fatal(err)
	}
	if h := holdOf(t, res); h.Type != problem.AmbiguousEffect {
		t.Errorf("hold = %s, want ambiguous-effect (the lookup's answer is unknown)", h.Type)
	}
	if st := p.steps(t)[0]; st.HoldReason != lifecycle.ReasonLookupUnknown || !strings.Contains(st.LastError, "redirect") {
		t.Errorf("step = %s/%s (%s), want held lookup_unknown, naming the redirect", st.Hold, st.HoldReason, st.LastError)
	}
}

// verifyHidden makes an open_hidden call, whose synchronous verification
// asks find_ticket: redirected, it never sees the effect.
func verifyHidden(t *testing.T, p *mcpProxy, a *agent) {
	t.Helper()
	ctx := context.Background()
	if res, err := a.session(t, ctx).CallTool(ctx, &sdk.CallToolParams{Name: "open_hidden", Arguments: callArgs("ops", "Unseen")}); err != nil || res.IsError {
		t.Fatalf("open_hidden: %+v, %v", res, err)
	}
	if st := p.steps(t)[0]; st.Hold != journal.HoldNeedsReview || st.HoldReason != lifecycle.ReasonNotVisible {
		t.Errorf("step = %s %s/%s, want held effect_not_visible", st.Status, st.Hold, st.HoldReason)
	}
}

// credentialSink is a server on another port that records what reached
// it.
type credentialSink struct {
	url  string
	mu   sync.Mutex
	n    int
	auth []string
}

func newCredentialSink(t *testing.T) *credentialSink {
	t.Helper()
	c := &credentialSink{}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.n++
		c.auth = append(c.auth, r.Header.Get("Authorization"))
		c.mu.Unlock()
		http.Error(w, "not an MCP server", http.StatusNotFound)
	}))
	t.Cleanup(hs.Close)
	c.url = hs.URL + "/collect"
	return c
}

// seen reports how many requests reached the sink, and their
// Authorization headers.
func (c *credentialSink) seen() (int, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n, append([]string(nil), c.auth...)
}

// redirectTool puts a front in place of ts's endpoint that answers every
// POST naming tool with a 307 to target, and relays everything else to
// the server.
func redirectTool(t *testing.T, ts *ticketServer, tool, target string) {
	t.Helper()
	upstream := *ts.url
	rp := &httputil.ReverseProxy{
		Rewrite:       func(pr *httputil.ProxyRequest) { pr.SetURL(&url.URL{Scheme: upstream.Scheme, Host: upstream.Host}) },
		FlushInterval: -1,
	}
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method == http.MethodPost && bytes.Contains(body, []byte(`"`+tool+`"`)) {
			http.Redirect(w, r, target, http.StatusTemporaryRedirect)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	u, _ := url.Parse(front.URL + upstream.Path)
	ts.url = u
}
