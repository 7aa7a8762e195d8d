package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const stripeSpec = "../../rules/openapi/testdata/stripe.json"

// rules init writes the skeleton to stdout or a new file, never replaces
// a file without --force, and what it writes passes rules check.
func TestRulesInit(t *testing.T) {
	cleanEnv(t)
	code, stdout, stderr := cli(t, "rules", "init", "--from-openapi", stripeSpec, "--api", "stripe")
	if code != 0 || !strings.Contains(stdout, "api: stripe\n") || !strings.Contains(stdout, "# TODO(toolguard): ") {
		t.Fatalf("stdout: exit %d\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	out := filepath.Join(t.TempDir(), "stripe.yaml")
	if code, _, stderr := cli(t, "rules", "init", "--from-openapi", stripeSpec, "--api", "stripe", "-o", out); code != 0 {
		t.Fatalf("-o: exit %d: %s", code, stderr)
	}
	if data, _ := os.ReadFile(out); string(data) != stdout {
		t.Errorf("the file differs from stdout")
	}
	code, check, stderr := cli(t, "rules", "check", out)
	if code != 0 || !strings.Contains(check, "ok: 1 APIs, 10 routes") {
		t.Errorf("rules check: exit %d\n%s%s", code, check, stderr)
	}

	if err := os.WriteFile(out, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = cli(t, "rules", "init", "--from-openapi", stripeSpec, "-o", out)
	if code != 1 || !strings.Contains(stderr, "exists (use --force to replace it)") {
		t.Errorf("existing file: exit %d, stderr %q", code, stderr)
	}
	if data, _ := os.ReadFile(out); string(data) != "mine\n" {
		t.Errorf("the existing file was changed: %q", data)
	}
	if code, _, stderr := cli(t, "rules", "init", "--from-openapi", stripeSpec, "--api", "stripe", "-o", out, "--force"); code != 0 {
		t.Fatalf("--force: exit %d: %s", code, stderr)
	}
	if data, _ := os.ReadFile(out); string(data) != stdout {
		t.Errorf("--force did not replace the file")
	}
}

func TestRulesInitErrors(t *testing.T) {
	cleanEnv(t)
	noWrites := filepath.Join(t.TempDir(), "reads.yaml")
	spec := "openapi: 3.0.0\ninfo: {title: t, version: '1'}\npaths: {/a: {get: {responses: {'200': {description: ok}}}}}\n"
	if err := os.WriteFile(noWrites, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{name: "no spec", args: nil, code: 2, want: "--from-openapi SPEC is required"},
		{name: "extra argument", args: []string{"--from-openapi", stripeSpec, "x"}, code: 2, want: `unexpected argument "x"`},
		{name: "missing file", args: []string{"--from-openapi", "nope.yaml"}, code: 1, want: "nope.yaml"},
		{name: "no write operations", args: []string{"--from-openapi", noWrites}, code: 1, want: "no POST, PUT, PATCH or DELETE operations"},
		{name: "bad api name", args: []string{"--from-openapi", stripeSpec, "--api", "Stripe"}, code: 1, want: `--api "Stripe"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := cli(t, append([]string{"rules", "init"}, tc.args...)...)
			if code != tc.code || !strings.Contains(stderr, tc.want) || stdout != "" {
				t.Errorf("exit %d (want %d), stdout %q, stderr %q (want %q)", code, tc.code, stdout, stderr, tc.want)
			}
		})
	}
}
