package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-github/v74/github"
)

// githubSim is a small GitHub REST API over HTTP or TLS: issues (create, list,
// search by a body term) and issue comments (create), counting effects.
type githubSim struct {
	*httptest.Server
	issueEffects   atomic.Int64
	commentEffects atomic.Int64
	searches       atomic.Int64
	mu             sync.Mutex
	issues         []map[string]any
	hookMu         sync.Mutex
	hook           func(stage string) bool // as upstream.hook, on issue creation
}

func newGitHubSim(t *testing.T, useTLS bool) *githubSim {
	g := &githubSim{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /repos/{owner}/{repo}/issues", g.createIssue)
	mux.HandleFunc("GET /repos/{owner}/{repo}/issues", g.listIssues)
	mux.HandleFunc("POST /repos/{owner}/{repo}/issues/{number}/comments", g.createComment)
	mux.HandleFunc("GET /search/issues", g.search)
	if useTLS {
		g.Server = httptest.NewTLSServer(mux)
	} else {
		g.Server = httptest.NewServer(mux)
	}
	t.Cleanup(g.Close)
	return g
}

func (g *githubSim) setHook(h func(stage string) bool) {
	g.hookMu.Lock()
	defer g.hookMu.Unlock()
	g.hook = h
}

func (g *githubSim) runHook(stage string) bool {
	g.hookMu.Lock()
	h := g.hook
	g.hookMu.Unlock()
	return h == nil || h(stage)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func (g *githubSim) createIssue(w http.ResponseWriter, r *http.Request) {
	var req struct{ Title, Body string }
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Title == "" {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"message": "Validation Failed"})
		return
	}
	if !g.runHook("before") {
		panic(http.ErrAbortHandler)
	}
	n := g.issueEffects.Add(1)
	repo := r.PathValue("owner") + "/" + r.PathValue("repo")
	issue := map[string]any{
		"id": 1000 + n, "number": n, "title": req.Title, "body": req.Body, "state": "open",
		"html_url":       fmt.Sprintf("https://github.com/%s/issues/%d", repo, n),
		"repository_url": "https://api.github.com/repos/" + repo,
	}
	g.mu.Lock()
	g.issues = append(g.issues, issue)
	g.mu.Unlock()
	g.runHook("after")
	writeJSON(w, http.StatusCreated, issue)
}

func (g *githubSim) listIssues(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	writeJSON(w, http.StatusOK, g.issues)
}

func (g *githubSim) createComment(w http.ResponseWriter, r *http.Request) {
	var req struct{ Body string }
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Body == "" {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"message": "Validation Failed"})
		return
	}
	n := g.commentEffects.Add(1)
	number, _ := strconv.Atoi(r.PathValue("number"))
	writeJSON(w, http.StatusCreated, map[string]any{"id": 5000 + n, "body": req.Body,
		"issue_url": fmt.Sprintf("https://api.github.com/repos/%s/%s/issues/%d", r.PathValue("owner"), r.PathValue("repo"), number)})
}

// search answers q's quoted "toolguard:..." term with the issues whose
// body holds that marker exactly, as GitHub's in:body search would.
func (g *githubSim) search(w http.ResponseWriter, r *http.Request) {
	g.searches.Add(1)
	q := r.URL.Query().Get("q")
	term := ""
	if i := strings.Index(q, `"toolguard:`); i >= 0 {
		term, _, _ = strings.Cut(q[i+1:], `"`)
	}
	items := []map[string]any{}
	g.mu.Lock()
	for _, is := range g.issues {
		if term != "" && strings.Contains(is["body"].(string), "<!-- "+term+" -->") {
			items = append(items, is)
		}
	}
	g.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"total_count": len(items), "incomplete_results": false, "items": items})
}

// newGitHubClient is go-github through toolguard, trusting its CA.
func newGitHubClient(t *testing.T, p *proc, g *githubSim) *github.Client {
	t.Helper()
	c, err := github.NewClient(p.client(t)).WithAuthToken("ghp_test").WithEnterpriseURLs(g.URL+"/", g.URL+"/")
	if err != nil {
		t.Fatal(err)
	}
	// WithEnterpriseURLs adds /api/v3/; the simulator serves the API at /.
	c.BaseURL.Path = "/"
	return c
}

// go-github against a GitHub simulator through the real toolguard over
// HTTP and HTTPS. Issues get a hidden marker with the key, and a lookup finds them
// by an exact search: creating an issue or a comment twice is one effect
// each, and after a SIGKILL that lost the answer of a created issue the
// client's retry is answered with the issue the search found, which
// go-github decodes. The marker stays out of the key: the retry's body
// (without it) keys the same.
func TestGoGitHub(t *testing.T) {
	rulesYAML, err := os.ReadFile(filepath.Join("testdata", "github", "github.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	prepare := func(t *testing.T, useTLS bool) (*githubSim, *setup) {
		g := newGitHubSim(t, useTLS)
		scheme, host, _ := strings.Cut(g.URL, "://")
		rules := strings.NewReplacer("SCHEME", scheme, "HOST", host).Replace(string(rulesYAML))
		s := newSetup(t, map[string]string{"github.yaml": rules})
		if useTLS {
			up := &upstream{Server: g.Server}
			s.args = append(s.args, "--config", writeConfig(t, s.dir, "upstream:\n  ca_file: "+up.caPEM(t, s.dir)+"\n"))
		}
		s.env = append(s.env, "TOOLGUARD_UPSTREAM_TIMEOUT=1s")
		return g, s
	}
	ctx := context.Background()
	issue := &github.IssueRequest{Title: github.Ptr("Refund failed for order 77"), Body: github.Ptr("The refund of order 77 failed.")}

	for _, useTLS := range []bool{false, true} {
		name := map[bool]string{false: "http", true: "https"}[useTLS]
		t.Run(name, func(t *testing.T) {
			testGoGitHub(t, ctx, issue, func(t *testing.T) (*githubSim, *setup) { return prepare(t, useTLS) })
		})
	}
}

// testGoGitHub runs TestGoGitHub's cases against simulators made by prepare.
func testGoGitHub(t *testing.T, ctx context.Context, issue *github.IssueRequest, prepare func(*testing.T) (*githubSim, *setup)) {
	t.Run("issue and comment twice", func(t *testing.T) {
		g, s := prepare(t)
		gh := newGitHubClient(t, s.start(t), g)
		i1, r1, err := gh.Issues.Create(ctx, "octocat", "hello", issue)
		if err != nil {
			t.Fatalf("create issue: %v", err)
		}
		if !strings.HasSuffix(i1.GetBody(), " -->") || !strings.HasPrefix(i1.GetBody(), "The refund of order 77 failed.\n<!-- toolguard:"+r1.Header.Get("Toolguard-Key")) {
			t.Errorf("stored body %q, want the marker with the key at its end", i1.GetBody())
		}
		i2, r2, err := gh.Issues.Create(ctx, "octocat", "hello", issue)
		if err != nil || i2.GetNumber() != i1.GetNumber() || r2.Header.Get("Toolguard-Outcome") != "replayed" {
			t.Fatalf("second create: #%d %q %v, want #%d replayed", i2.GetNumber(), r2.Header.Get("Toolguard-Outcome"), err, i1.GetNumber())
		}
		comment := &github.IssueComment{Body: github.Ptr("Retrying the refund.")}
		c1, _, err := gh.Issues.CreateComment(ctx, "octocat", "hello", i1.GetNumber(), comment)
		if err != nil {
			t.Fatalf("create comment: %v", err)
		}
		c2, r4, err := gh.Issues.CreateComment(ctx, "octocat", "hello", i1.GetNumber(), comment)
		if err != nil || c2.GetID() != c1.GetID() || r4.Header.Get("Toolguard-Outcome") != "replayed" {
			t.Fatalf("second comment: %d %q %v, want %d replayed", c2.GetID(), r4.Header.Get("Toolguard-Outcome"), err, c1.GetID())
		}
		list, _, err := gh.Issues.ListByRepo(ctx, "octocat", "hello", nil)
		if err != nil || len(list) != 1 {
			t.Fatalf("list: %d issues, %v; want 1", len(list), err)
		}
		if g.searches.Load() != 0 {
			t.Errorf("a search without a crash")
		}
		if n, m := g.issueEffects.Load(), g.commentEffects.Load(); n != 1 || m != 1 {
			t.Fatalf("effects: %d issues, %d comments; want 1 each", n, m)
		}
	})

	t.Run("kill after the effect, recovered by search", func(t *testing.T) {
		g, s := prepare(t)
		p := s.start(t)
		reached, release := make(chan struct{}), make(chan struct{})
		var once sync.Once
		g.setHook(func(stage string) bool {
			if stage == "after" {
				once.Do(func() { close(reached) })
				<-release
			}
			return true
		})
		done := make(chan struct{})
		go func() {
			defer close(done)
			newGitHubClient(t, p, g).Issues.Create(ctx, "octocat", "hello", issue) // its answer is lost
		}()
		<-reached
		p.kill()
		close(release)
		<-done
		g.setHook(nil)

		gh := newGitHubClient(t, s.start(t), g)
		got, resp, err := gh.Issues.Create(ctx, "octocat", "hello", issue)
		if err != nil {
			t.Fatalf("retry after the crash: %v", err)
		}
		if resp.StatusCode != http.StatusCreated || resp.Header.Get("Toolguard-Outcome") != "recovered" || got.GetNumber() != 1 || got.GetTitle() != issue.GetTitle() {
			t.Fatalf("retry: %d %q #%d %q, want 201 recovered #1", resp.StatusCode, resp.Header.Get("Toolguard-Outcome"), got.GetNumber(), got.GetTitle())
		}
		again, resp, err := gh.Issues.Create(ctx, "octocat", "hello", issue)
		if err != nil || again.GetNumber() != 1 || resp.Header.Get("Toolguard-Outcome") != "replayed" {
			t.Fatalf("later duplicate: #%d %q %v, want #1 replayed", again.GetNumber(), resp.Header.Get("Toolguard-Outcome"), err)
		}
		if n := g.issueEffects.Load(); n != 1 {
			t.Fatalf("issue effects = %d, want 1", n)
		}
		if n := g.searches.Load(); n != 1 {
			t.Fatalf("searches = %d, want 1 (the recovery's lookup)", n)
		}
	})
}
