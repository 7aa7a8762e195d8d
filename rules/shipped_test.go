package rules_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/rules"
	"github.com/toolguard/toolguard/rules/samples"
)

// TestShippedRules checks every rule file the repository ships in
// examples/rules against its samples, examples/samples/<name>.jsonl: each
// sample keys without problems, and every route has a sample, a pair that
// must share a key (a retry differing only in ignored fields) and a pair
// that must not (another intent). The rule files under deploy/ are copies
// of these (deploy/manifests_test.go checks that they are identical).
//
// Regression: deploy/kubernetes keyed the Stripe payment intent on
// metadata.order_id, which no form body holds, so every order got one key.
func TestShippedRules(t *testing.T) {
	files, err := filepath.Glob("../examples/rules/*")
	if err != nil || len(files) == 0 {
		t.Fatalf("no shipped rule files: %v", err)
	}
	for _, file := range files {
		base := filepath.Base(file)
		name := strings.TrimSuffix(strings.TrimSuffix(base, ".yaml"), ".yml")
		t.Run(base, func(t *testing.T) {
			if name == base {
				t.Fatalf("%s: rule files end in .yaml or .yml", file)
			}
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			api := mustParseFile(t, file, data)
			set, err := rules.NewSet(api)
			if err != nil {
				t.Fatal(err)
			}
			if api.MCP != nil {
				// Samples are HTTP requests; an MCP server's tools are
				// checked through a real MCP client against a server that
				// answers as the real one does (proxy TestMCPExampleGitHub).
				if _, err := os.Stat("../proxy/mcp_example_test.go"); err != nil {
					t.Fatalf("the MCP rule file %s has no test of its own: %v", file, err)
				}
				return
			}
			sampleFile := filepath.Join("../examples/samples", name+".jsonl")
			f, err := os.Open(sampleFile)
			if err != nil {
				t.Fatalf("every shipped rule file needs samples: %v", err)
			}
			defer f.Close()
			ss, err := samples.Read(sampleFile, f)
			if err != nil {
				t.Fatal(err)
			}
			rep := samples.Check(set, ss, &rules.Deriver{Secret: []byte("test")})
			for _, p := range rep.Problems {
				t.Error(p)
			}
			for _, g := range rep.Gaps(set) {
				t.Error(g)
			}
		})
	}
}

func mustParseFile(t *testing.T, file string, data []byte) *rules.API {
	t.Helper()
	api, err := rules.Parse(file, data)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return api
}
