package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

const (
	coverageSpec = "../../rules/openapi/testdata/coverage/spec.yaml"
	coverageDir  = "../../rules/openapi/testdata/coverage/"
)

// rules coverage prints the table (its golden file is the one of the
// rules/openapi tests), JSON with a summary, and exits 1 when a route
// matches no operation (a typo in the path).
func TestRulesCoverage(t *testing.T) {
	cleanEnv(t)
	code, stdout, stderr := cli(t, "rules", "coverage", "--from-openapi", coverageSpec, coverageDir+"rules.yaml")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if want, err := os.ReadFile(coverageDir + "rules.golden"); err != nil || stdout != string(want) {
		t.Errorf("stdout differs from %srules.golden (%v):\n%s", coverageDir, err, stdout)
	}

	code, stdout, stderr = cli(t, "rules", "coverage", coverageDir+"rules.yaml", "--from-openapi", coverageSpec, "--json")
	var got struct {
		API        string `json:"api"`
		Operations []struct {
			Method, Path, Route, Handling string
		} `json:"operations"`
		Summary struct {
			Operations, Routed, Unlisted, Passes int
			OtherHost                            int `json:"other_host"`
		} `json:"summary"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); code != 0 || err != nil {
		t.Fatalf("--json: exit %d, %v\n%s%s", code, err, stdout, stderr)
	}
	if got.API != "things" || got.Summary.Operations != 9 || got.Summary.Routed != 4 || got.Summary.Unlisted != 3 ||
		got.Summary.Passes != 1 || got.Summary.OtherHost != 1 || got.Operations[0].Handling != "route" {
		t.Errorf("--json: %+v", got)
	}
}

// Regression-style guard for the point of the command: a route whose path
// has a typo matches no operation, and the command exits 1 naming it.
func TestRulesCoverageTypo(t *testing.T) {
	cleanEnv(t)
	code, stdout, stderr := cli(t, "rules", "coverage", "--from-openapi", coverageSpec, coverageDir+"typo.yaml")
	if code != 1 || !strings.Contains(stdout, "route create_thing (POST /v1/thing, line 6) matches no operation of the document") ||
		!strings.Contains(stdout, "; 3 routes match no operation\n") ||
		!strings.Contains(stderr, "rules coverage: 3 routes of "+coverageDir+"typo.yaml match no operation of "+coverageSpec) {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	code, stdout, _ = cli(t, "rules", "coverage", "--from-openapi", coverageSpec, coverageDir+"typo.yaml", "--markdown")
	if code != 1 || !strings.HasPrefix(stdout, "| operation | id | hosts | handled by |\n") {
		t.Errorf("--markdown: exit %d\n%s", code, stdout)
	}
}

func TestRulesCoverageErrors(t *testing.T) {
	cleanEnv(t)
	rulesFile := coverageDir + "rules.yaml"
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{name: "no spec", args: []string{rulesFile}, code: 2, want: "--from-openapi SPEC is required"},
		{name: "no file", args: []string{"--from-openapi", coverageSpec}, code: 2, want: "want exactly one rule FILE"},
		{name: "two files", args: []string{"--from-openapi", coverageSpec, rulesFile, rulesFile}, code: 2, want: "want exactly one rule FILE"},
		{name: "two formats", args: []string{"--from-openapi", coverageSpec, rulesFile, "--json", "--markdown"}, code: 2, want: "give one"},
		{name: "missing spec", args: []string{"--from-openapi", "nope.yaml", rulesFile}, code: 1, want: "nope.yaml"},
		{name: "broken rule file", args: []string{"--from-openapi", coverageSpec, coverageSpec}, code: 1, want: "rules coverage: "},
		{name: "server without host", args: []string{"--from-openapi", coverageSpec, rulesFile, "--server", "/v1"}, code: 1, want: "want an absolute URL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := cli(t, append([]string{"rules", "coverage"}, tc.args...)...)
			if code != tc.code || !strings.Contains(stderr, tc.want) || stdout != "" {
				t.Errorf("exit %d (want %d), stdout %q, stderr %q (want %q)", code, tc.code, stdout, stderr, tc.want)
			}
		})
	}
}
