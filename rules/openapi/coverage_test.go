package openapi

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/rules"
)

// parseRuleFile parses a rule file of testdata.
func parseRuleFile(t *testing.T, path string) *rules.API {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	api, err := rules.Parse(path, data)
	if err != nil {
		t.Fatal(err)
	}
	return api
}

// TestCoverageGolden matches testdata/coverage/spec.yaml, written for the
// test (a read-only POST, an operation on another host, a segment with a
// parameter among text, a '#' discriminator), and the trimmed Stripe
// spec against rule files, and compares the table (and Markdown) with
// the golden files. typo.yaml has routes that match no operation.
func TestCoverageGolden(t *testing.T) {
	tests := []struct {
		name, spec, rules string
		servers           []string
		stale             []string
	}{
		{name: "rules", spec: "coverage/spec.yaml", rules: "coverage/rules.yaml"},
		{name: "typo", spec: "coverage/spec.yaml", rules: "coverage/typo.yaml",
			stale: []string{"create_thing", "delete_thing", "replace_thing"}},
		{name: "stripe", spec: "stripe.json", rules: "coverage/stripe.yaml",
			servers: []string{"https://files.stripe.com"}, stale: []string{"create_charge"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := os.ReadFile(filepath.Join("testdata", tc.spec))
			if err != nil {
				t.Fatal(err)
			}
			api := parseRuleFile(t, filepath.Join("testdata", tc.rules))
			c, err := CoverageOf(spec, api, CoverageOptions{Servers: tc.servers})
			if err != nil {
				t.Fatal(err)
			}
			var stale []string
			for _, s := range c.Stale {
				stale = append(stale, s.Route)
			}
			if !slices.Equal(stale, tc.stale) {
				t.Errorf("stale routes %q, want %q", stale, tc.stale)
			}
			var table bytes.Buffer
			if err := c.WriteTable(&table); err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("testdata", "coverage", tc.name+".golden"), table.String())
			golden(t, filepath.Join("testdata", "coverage", tc.name+".md.golden"), string(c.Markdown()))
		})
	}
}

// A document without an absolute server is matched at the file's hosts,
// with a note; --server adds hosts; an MCP file and a server without a
// host are errors.
func TestCoverageServers(t *testing.T) {
	api := parseRuleFile(t, "testdata/coverage/rules.yaml")
	relative := oaDoc("3.0.3", "  /things:\n    post: {responses: {'200': {description: ok}}}\n", "")
	relative = bytes.Replace(relative, []byte("servers: [{url: 'https://api.example.com'}]"), []byte("servers: [{url: /v1}]"), 1)
	c, err := CoverageOf(relative, api, CoverageOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Notes) != 1 || len(c.Operations) != 1 || c.Operations[0].Route != "create_thing" ||
		!slices.Equal(c.Operations[0].Hosts, []string{"api.example.com"}) {
		t.Errorf("relative server: %+v", c)
	}

	c, err = CoverageOf(relative, api, CoverageOptions{Servers: []string{"https://api.example.com/v1", "https://other.example.com/v1"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Counts(); got.Routed != 1 || got.OtherHost != 1 || got.Operations != 2 {
		t.Errorf("extra servers: counts %+v", got)
	}

	if _, err := CoverageOf(relative, api, CoverageOptions{Servers: []string{"/v2"}}); !errors.Is(err, ErrServerHost) {
		t.Errorf("a server without a host: %v, want ErrServerHost", err)
	}
	mcp := parseRuleFile(t, "../testdata/mcp/good_tickets.yaml")
	if _, err := CoverageOf(relative, mcp, CoverageOptions{}); !errors.Is(err, ErrNotREST) {
		t.Errorf("an MCP file: %v, want ErrNotREST", err)
	}
	noOps := []byte("openapi: 3.0.3\ninfo: {title: t, version: '1'}\npaths: {}\n")
	if _, err := CoverageOf(noOps, api, CoverageOptions{}); !errors.Is(err, ErrNoOperations) {
		t.Errorf("no operations: %v, want ErrNoOperations", err)
	}
}

func TestPatternMatchesTemplate(t *testing.T) {
	tests := []struct {
		pattern, template string
		want              bool
	}{
		{"/v1/customers", "/v1/customers", true},
		{"/v1/customers", "/v1/customer", false},
		{"/v1/customers/{id}", "/v1/customers/{customer}", true},
		{"/v1/customers/{id}", "/v1/customers/search", true}, // a wildcard matches a literal, as in a request
		{"/v1/customers/search", "/v1/customers/{customer}", false},
		{"/v1/customers/{id}", "/v1/customers", false},
		{"/v1/customers/{id}", "/v1/customers/{customer}/sources", false},
		{"/repos/{o}/{r}/contents/{path...}", "/repos/{owner}/{repo}/contents/{path}", true},
		{"/repos/{o}/{r}/contents/{path...}", "/repos/{owner}/{repo}/contents", false},
		{"/files/", "/files/{id}/x", true},
		{"/files/{$}", "/files/", true},
		{"/files/{$}", "/files/{id}", false},
		{"/v1/legacy", "/v1/legacy#mode=old", true},
		{"/v1/a%20b", "/v1/a b", true},
		{"/v1/things/{id}", "/v1/things/{id}:archive", true},
		{"/v1/things/archive", "/v1/things/{id}:archive", false},
	}
	for _, tc := range tests {
		if got := patternMatchesTemplate(tc.pattern, tc.template); got != tc.want {
			t.Errorf("patternMatchesTemplate(%q, %q) = %v, want %v", tc.pattern, tc.template, got, tc.want)
		}
	}
}

// A concrete path holds each parameter as one escaped segment.
func TestConcretePath(t *testing.T) {
	tests := map[string]string{
		"/repos/{owner}/{repo}":   "/repos/%7Bowner%7D/%7Brepo%7D",
		"/things/{id}:archive":    "/things/%7Bid%7D:archive",
		"/{Bucket}/{Key}#uploads": "/%7BBucket%7D/%7BKey%7D",
		"/a/":                     "/a/",
	}
	for in, want := range tests {
		if got := concretePath(in); got != want || strings.Count(got, "/") != strings.Count(strings.Split(in, "#")[0], "/") {
			t.Errorf("concretePath(%q) = %q, want %q", in, got, want)
		}
	}
}
