package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// cli runs one command line in-process, as main does, and returns the exit
// code and what the command printed.
func cli(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = exitCode(run(context.Background(), args, &out, &errb), &errb)
	return code, out.String(), errb.String()
}

// cleanEnv unsets every TOOLGUARD_* variable for the test (an empty value
// counts as unset everywhere), so a developer's shell cannot change the
// results.
func cleanEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "TOOLGUARD_") {
			t.Setenv(k, "")
		}
	}
}

// golden compares got with testdata/name.golden, or rewrites the file
// under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test -update rewrites it)\n--- got:\n%s--- want:\n%s", path, got, want)
	}
}

func TestExitCodes(t *testing.T) {
	cleanEnv(t)
	dir := t.TempDir()
	notADir := filepath.Join(dir, "file")
	if err := os.WriteFile(notADir, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, `{"type":"urn:toolguard:journal","title":"journal","status":500,"detail":"disk on fire"}`)
	}))
	defer broken.Close()
	// serve must never get as far as listening here. Every case fails
	// before; should one not, the broken rules stop it before it writes
	// or listens anywhere.
	serve := func(extra ...string) []string {
		return append([]string{"serve", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
			"--journal", filepath.Join(dir, "tg.db"), "--ca-dir", filepath.Join(dir, "ca"),
			"--rules", "testdata/broken/effect"}, extra...)
	}

	tests := []struct {
		name       string
		args       []string
		env        map[string]string
		wantCode   int
		wantStderr string // a substring of stderr
	}{
		// Usage errors: 2.
		{name: "no command", args: nil, wantCode: 2, wantStderr: "no command given"},
		{name: "unknown command", args: []string{"frobnicate"}, wantCode: 2, wantStderr: `unknown command "frobnicate"`},
		{name: "missing sub-command", args: []string{"journal"}, wantCode: 2, wantStderr: "journal: missing sub-command"},
		{name: "unknown sub-command", args: []string{"rules", "lint"}, wantCode: 2, wantStderr: `rules: unknown sub-command "lint"`},
		{name: "unknown flag", args: []string{"journal", "ls", "--colour"}, wantCode: 2, wantStderr: "flag provided but not defined: -colour"},
		{name: "bad status", args: []string{"journal", "ls", "--status", "done"}, wantCode: 2, wantStderr: "--status"},
		{name: "bad hold", args: []string{"journal", "ls", "--hold", "forever"}, wantCode: 2, wantStderr: "--hold"},
		{name: "show without key", args: []string{"journal", "show"}, wantCode: 2, wantStderr: "want exactly one KEY"},
		{name: "show with two keys", args: []string{"journal", "show", "a", "b"}, wantCode: 2, wantStderr: "want exactly one KEY"},
		{name: "resolve bad outcome", args: []string{"review", "resolve", "k", "--outcome", "maybe"}, wantCode: 2, wantStderr: "--outcome must be committed or not-executed"},
		{name: "approve without key", args: []string{"review", "approve"}, wantCode: 2, wantStderr: "want exactly one KEY"},
		{name: "rules check two dirs", args: []string{"rules", "check", "a", "b"}, wantCode: 2, wantStderr: "at most one DIR"},
		{name: "key explain without url", args: []string{"key", "explain"}, wantCode: 2, wantStderr: "--url is required"},
		{name: "key explain relative url", args: []string{"key", "explain", "--url", "/v1/invoices"}, wantCode: 2, wantStderr: "--url must be absolute"},
		{name: "key explain bad header", args: []string{"key", "explain", "--url", "http://x/", "--header", "NoColon"}, wantCode: 2, wantStderr: "--header must be 'Name: value'"},
		{name: "workflow unknown sub-command", args: []string{"workflow", "list"}, wantCode: 2, wantStderr: `workflow: unknown sub-command "list"`},
		{name: "workflow show without id", args: []string{"workflow", "show"}, wantCode: 2, wantStderr: "want exactly one ID"},
		{name: "workflow resume from a file without rules", args: []string{"workflow", "resume", "wf-1", "--journal", filepath.Join(dir, "tg.db"), "--rules", filepath.Join(dir, "no-rules")}, wantCode: 1,
			wantStderr: "workflow resume: load rules from"},
		{name: "ca unknown sub-command", args: []string{"ca", "rotate"}, wantCode: 2, wantStderr: `ca: unknown sub-command "rotate"`},
		{name: "serve stray argument", args: serve("now"), wantCode: 2, wantStderr: `unexpected argument "now"`},

		// Configuration errors: 2, one line naming the field and the value.
		{name: "flag unmatched", args: serve("--unmatched", "maybe"), wantCode: 2, wantStderr: `toolguard: config: --unmatched: unknown policy "maybe"`},
		{name: "flag log level", args: serve("--log-level", "loud"), wantCode: 2, wantStderr: `toolguard: config: --log-level: unknown level "loud"`},
		{name: "env unmatched", args: serve(), env: map[string]string{"TOOLGUARD_UNMATCHED": "maybe"}, wantCode: 2,
			wantStderr: `toolguard: config: TOOLGUARD_UNMATCHED (unmatched): unknown policy "maybe"`},
		{name: "env max body", args: serve(), env: map[string]string{"TOOLGUARD_MAX_BODY": "8 M"}, wantCode: 2,
			wantStderr: `toolguard: config: TOOLGUARD_MAX_BODY (limits.max_body): invalid size "8 M"`},
		{name: "env duration", args: serve(), env: map[string]string{"TOOLGUARD_IN_FLIGHT_WAIT": "soon"}, wantCode: 2,
			wantStderr: `toolguard: config: TOOLGUARD_IN_FLIGHT_WAIT (limits.in_flight_wait): invalid duration "soon"`},
		{name: "env number", args: serve(), env: map[string]string{"TOOLGUARD_RETRY_MAX_ATTEMPTS": "three"}, wantCode: 2,
			wantStderr: `toolguard: config: TOOLGUARD_RETRY_MAX_ATTEMPTS (retry.max_attempts): want a whole number (got "three")`},
		{name: "admin beyond loopback without token", args: serve("--admin-listen", "0.0.0.0:0"), wantCode: 2,
			wantStderr: "a token is required when the admin API listens beyond loopback"},
		{name: "config file unknown field", args: serve("--config", "testdata/config/unknown_field.yaml"), wantCode: 2,
			wantStderr: `toolguard: config: testdata/config/unknown_field.yaml:3:3: admin: unknown field "lisen" (did you mean "listen"?)`},
		// Regression: an unreadable upstream.ca_file exited 1, naming no setting.
		{name: "env ca file missing", args: serve(), env: map[string]string{"TOOLGUARD_UPSTREAM_CA_FILE": filepath.Join(dir, "absent.pem")}, wantCode: 2,
			wantStderr: "toolguard: config: upstream.ca_file (TOOLGUARD_UPSTREAM_CA_FILE): cannot read " + filepath.Join(dir, "absent.pem") + ": no such file or directory"},
		{name: "config file ca file not PEM", args: serve("--config", "testdata/config/ca_file_not_pem.yaml"), wantCode: 2,
			wantStderr: "toolguard: config: upstream.ca_file (TOOLGUARD_UPSTREAM_CA_FILE): testdata/config/unknown_field.yaml holds no PEM certificate"},
		{name: "env mcp servers", args: serve(), env: map[string]string{"TOOLGUARD_MCP_SERVERS": "tickets"}, wantCode: 2,
			wantStderr: "toolguard: config: mcp.servers (TOOLGUARD_MCP_SERVERS): want name=URL (got tickets)"},
		{name: "mcp server described by a REST rule file", args: serve("--rules", "../../examples/rules"), env: map[string]string{"TOOLGUARD_MCP_SERVERS": "demo=http://127.0.0.1:1/mcp"}, wantCode: 2,
			wantStderr: "toolguard: config: mcp.servers (TOOLGUARD_MCP_SERVERS): server demo: the rule file ../../examples/rules/demo.yaml of api demo describes routes, not MCP tools"},
		{name: "config file missing", args: serve("--config", "testdata/config/absent.yaml"), wantCode: 2,
			wantStderr: "testdata/config/absent.yaml: cannot open config file"},

		// Runtime errors: 1.
		{name: "rules check missing dir", args: []string{"rules", "check", "testdata/absent"}, wantCode: 1, wantStderr: "no such file or directory"},
		{name: "rules check broken dir", args: []string{"rules", "check", "testdata/broken/effect"}, wantCode: 1, wantStderr: "testdata/broken/effect has errors"},
		{name: "serve broken rules", args: serve(), wantCode: 1, wantStderr: `billing.yaml:8:13: effect: unknown effect "maybe"`},
		{name: "journal ls missing file", args: []string{"journal", "ls", "--journal", filepath.Join(dir, "absent.db")}, wantCode: 1, wantStderr: "open journal"},
		{name: "journal ls admin error", args: []string{"journal", "ls", "--admin", broken.URL}, wantCode: 1, wantStderr: "admin API: 500 Internal Server Error: disk on fire"},
		{name: "journal show admin from env", args: []string{"journal", "show", "k1"}, env: map[string]string{"TOOLGUARD_ADMIN_URL": broken.URL}, wantCode: 1,
			wantStderr: "disk on fire"},
		{name: "key explain missing body file", args: []string{"key", "explain", "--url", "http://x/", "--body", "@testdata/absent.json"}, wantCode: 1, wantStderr: "read body"},
		{name: "ca init on a file", args: []string{"ca", "init", "--dir", notADir}, wantCode: 1, wantStderr: notADir},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			code, _, stderr := cli(t, tc.args...)
			if code != tc.wantCode {
				t.Errorf("exit code = %d, want %d; stderr:\n%s", code, tc.wantCode, stderr)
			}
			if !strings.Contains(stderr, tc.wantStderr) {
				t.Errorf("stderr does not contain %q:\n%s", tc.wantStderr, stderr)
			}
			if tc.wantCode == 2 && strings.Contains(tc.wantStderr, "config:") && strings.Count(stderr, "\n") != 1 {
				t.Errorf("a configuration error is one line, got:\n%s", stderr)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "ca")); err == nil {
		t.Error("a failed serve created its CA directory")
	}
}

func TestHelp(t *testing.T) {
	cleanEnv(t)
	tests := []struct {
		name       string
		args       []string
		wantPrefix string
	}{
		{name: "help", args: []string{"help"}, wantPrefix: "toolguard keeps AI agents from repeating side effects."},
		{name: "--help", args: []string{"--help"}, wantPrefix: "toolguard keeps AI agents from repeating side effects."},
		{name: "serve", args: []string{"serve", "--help"}, wantPrefix: "Usage: toolguard serve"},
		{name: "journal", args: []string{"journal", "--help"}, wantPrefix: "Usage: toolguard journal COMMAND"},
		{name: "journal ls", args: []string{"journal", "ls", "--help"}, wantPrefix: "Usage: toolguard journal ls"},
		{name: "journal show", args: []string{"journal", "show", "-h"}, wantPrefix: "Usage: toolguard journal show"},
		{name: "journal tail", args: []string{"journal", "tail", "--help"}, wantPrefix: "Usage: toolguard journal tail"},
		{name: "review", args: []string{"review", "help"}, wantPrefix: "Usage: toolguard review COMMAND"},
		{name: "review ls", args: []string{"review", "ls", "--help"}, wantPrefix: "Usage: toolguard review ls"},
		{name: "review approve", args: []string{"review", "approve", "--help"}, wantPrefix: "Usage: toolguard review approve"},
		{name: "review resolve", args: []string{"review", "resolve", "--help"}, wantPrefix: "Usage: toolguard review resolve"},
		{name: "workflow", args: []string{"workflow", "--help"}, wantPrefix: "Usage: toolguard workflow COMMAND"},
		{name: "workflow ls", args: []string{"workflow", "ls", "--help"}, wantPrefix: "Usage: toolguard workflow ls"},
		{name: "workflow show", args: []string{"workflow", "show", "--help"}, wantPrefix: "Usage: toolguard workflow show"},
		{name: "rules", args: []string{"rules", "--help"}, wantPrefix: "Usage: toolguard rules COMMAND"},
		{name: "rules check", args: []string{"rules", "check", "--help"}, wantPrefix: "Usage: toolguard rules check"},
		{name: "key", args: []string{"key", "--help"}, wantPrefix: "Usage: toolguard key explain"},
		{name: "key explain", args: []string{"key", "explain", "--help"}, wantPrefix: "Usage: toolguard key explain"},
		{name: "ca", args: []string{"ca", "--help"}, wantPrefix: "Usage: toolguard ca init"},
		{name: "ca init", args: []string{"ca", "init", "--help"}, wantPrefix: "Usage: toolguard ca init"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := cli(t, tc.args...)
			if code != 0 {
				t.Errorf("exit code = %d, want 0", code)
			}
			if !strings.HasPrefix(stdout, tc.wantPrefix) {
				t.Errorf("stdout does not start with %q:\n%s", tc.wantPrefix, stdout)
			}
			if stderr != "" {
				t.Errorf("stderr = %q, want nothing", stderr)
			}
		})
	}
}

// Regression: parseFlags (run.go) calls fs.Usage after flag.FlagSet.Parse
// has already called it for -h/--help, so every command's flag help was
// printed twice.
func TestHelpPrintedOnce(t *testing.T) {
	cleanEnv(t)
	for _, args := range [][]string{
		{"serve", "--help"}, {"journal", "ls", "--help"}, {"journal", "show", "--help"}, {"journal", "tail", "--help"},
		{"review", "ls", "--help"}, {"review", "approve", "--help"}, {"review", "resolve", "--help"}, {"workflow", "ls", "--help"},
		{"rules", "check", "--help"}, {"key", "explain", "--help"}, {"ca", "init", "--help"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			_, stdout, _ := cli(t, args...)
			if n := strings.Count(stdout, "Usage:"); n != 1 {
				t.Errorf("usage printed %d times, want once:\n%s", n, stdout)
			}
		})
	}
}

// Regression: commands without positional arguments ignore stray ones
// (parseFlags never looks at fs.Args, and runVersion never looks at its
// arguments at all), so a mistyped command line runs something else
// instead of failing with a usage error, and "version --help" prints no
// usage.
func TestStrayArguments(t *testing.T) {
	cleanEnv(t)
	tests := []struct {
		args       []string
		wantCode   int
		wantStdout string // prefix
	}{
		{args: []string{"journal", "ls", "committed"}, wantCode: 2},
		{args: []string{"journal", "tail", "10"}, wantCode: 2},
		{args: []string{"review", "ls", "all"}, wantCode: 2},
		{args: []string{"workflow", "ls", "wf-1"}, wantCode: 2},
		{args: []string{"ca", "init", "somewhere"}, wantCode: 2},
		{args: []string{"version", "2"}, wantCode: 2},
		{args: []string{"version", "--help"}, wantCode: 0, wantStdout: "Usage: toolguard version"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			// Never dialled, never written to: the usage error comes first.
			t.Setenv("TOOLGUARD_ADMIN_URL", "http://127.0.0.1:1")
			t.Setenv("TOOLGUARD_CA_DIR", t.TempDir())
			code, stdout, stderr := cli(t, tc.args...)
			if code != tc.wantCode || !strings.HasPrefix(stdout, tc.wantStdout) {
				t.Errorf("exit code = %d, want %d; stdout (want prefix %q):\n%s\nstderr:\n%s", code, tc.wantCode, tc.wantStdout, stdout, stderr)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	cleanEnv(t)
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, stdout, stderr := cli(t, args...)
		if code != 0 || stderr != "" {
			t.Errorf("%v: exit code %d, stderr %q; want 0 and nothing", args, code, stderr)
		}
		want := regexp.MustCompile(`^toolguard \S+ \(` + regexp.QuoteMeta(runtime.Version()+", "+runtime.GOOS+"/"+runtime.GOARCH) + `\)\n$`)
		if !want.MatchString(stdout) {
			t.Errorf("%v: stdout = %q, want it to match %s", args, stdout, want)
		}
	}
}
