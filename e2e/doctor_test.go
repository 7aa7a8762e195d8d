package e2e

import (
	"flag"
	"github.com/toolguard/toolguard/internal/skipped"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// normalizeDoctor replaces what changes from run to run (ports,
// directories, the wording of each client's TLS error) with placeholders.
func normalizeDoctor(out, dir string) string {
	out = strings.ReplaceAll(out, dir, "$DIR")
	out = regexp.MustCompile(`http://127\.0\.0\.1:\d+`).ReplaceAllString(out, "$$PROXY")
	out = regexp.MustCompile(`http://localhost:\d+`).ReplaceAllString(out, "$$ADMIN")
	out = regexp.MustCompile(`(?m)^(✗ (Go|curl|Python|Node|Node fetch): HTTPS through the proxy failed: ).*$`).ReplaceAllString(out, "$1<error>")
	out = regexp.MustCompile(`\(\d+\.\d MiB\)`).ReplaceAllString(out, "(N MiB)")
	return out
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "doctor", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("doctor output differs from %s:\n--- got\n%s--- want\n%s", path, got, want)
	}
}

// needClients skips unless curl, python3 and node are installed: the
// golden files show a line for each (CI has all three).
func needClients(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"curl", "python3", "node"} {
		if _, err := exec.LookPath(tool); err != nil {
			skipped.Skip(t, tool, tool+" is not installed; the golden output checks it")
		}
	}
}

// TestDoctorUnderExec: in the environment toolguard exec makes, with an
// agent token configured (without one the command gets no admin URL),
// every check passes. It runs where undici is installed: before Node 24,
// Node's fetch goes through the proxy with exec's preload of it.
func TestDoctorUnderExec(t *testing.T) {
	needClients(t)
	modules := filepath.Dir(filepath.Dir(undiciDir(t)))
	_, args := execSetup(t)
	dir := filepath.Dir(args[len(args)-1]) // --ca-dir DIR/ca
	r := tgIn(t, modules, []string{"TOOLGUARD_ADMIN_AGENT_TOKEN=agent-secret"}, append(args, "--", binary, "doctor", "--rules", filepath.Join(dir, "rules"), "--journal", filepath.Join(dir, "toolguard.db"))...)
	if r.code != 0 {
		t.Errorf("doctor under exec: exit code %d, want 0\n%s%s", r.code, r.stdout, r.stderr)
	}
	checkGolden(t, "ok.golden", normalizeDoctor(r.stdout, dir))
}

// TestDoctorBroken: the mistakes people make, each with its fix; exit 1.
func TestDoctorBroken(t *testing.T) {
	needClients(t)
	up := newUpstream(t, true)
	s := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), invoiceRoute)})
	p := s.start(t)
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "broken.yaml"), []byte("api: x\nroutes:\n  - name: a\n    match: POST /a\n    effect: sometimes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"HTTPS_PROXY=" + p.proxyURL.String(), // only one of four, and no CA bundle
		"NO_PROXY=127.0.0.1:8481",            // a port: curl ignores the entry
		"TOOLGUARD_ADMIN_URL=http://127.0.0.2:1",
	}
	r := tg(t, env, "doctor", "--rules", bad, "--journal", filepath.Join(s.dir, "missing", "toolguard.db"))
	if r.code != 1 {
		t.Errorf("exit code %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	out := strings.ReplaceAll(normalizeDoctor(r.stdout, s.dir), bad, "$BAD")
	checkGolden(t, "broken.golden", out)
	// Each client failed on the certificate, not on reaching the proxy.
	if n := strings.Count(out, "fix: run the agent with `toolguard exec -- COMMAND`, which sets every variable, or point"); n != 4 {
		t.Errorf("%d trust fixes, want 4 (Go, curl, Python, Node):\n%s", n, r.stdout)
	}
}

// TestCheckHost: toolguard answers toolguard.invalid itself, over HTTP and
// HTTPS (signed by its CA), even when unmatched calls are rejected and no
// host is allowed, and records nothing in the journal.
func TestCheckHost(t *testing.T) {
	s := newSetup(t, map[string]string{"billing.yaml": ruleFile("x.example", invoiceRoute)})
	s.env = append(s.env, "TOOLGUARD_UNMATCHED=reject", "TOOLGUARD_UPSTREAM_ALLOW_HOSTS=x.example")
	p := s.start(t)
	c := p.client(t)
	for _, u := range []string{"https://toolguard.invalid/", "http://toolguard.invalid/anything"} {
		for _, method := range []string{"GET", "POST"} {
			resp, body := do(t, c, mustRequest(method, u))
			if resp.StatusCode != 200 || resp.Header.Get("Toolguard-Check") != "ok" || !strings.Contains(body, `"toolguard":"ok"`) {
				t.Errorf("%s %s: %d %q %s", method, u, resp.StatusCode, resp.Header.Get("Toolguard-Check"), body)
			}
		}
	}
	if steps := stepsOf(t, p, ""); len(steps) != 0 {
		t.Errorf("the check host left %d steps in the journal", len(steps))
	}
}

// TestDoctorAdminToken checks TOOLGUARD_ADMIN_TOKEN against the admin API.
func TestDoctorAdminToken(t *testing.T) {
	s := newSetup(t, map[string]string{"billing.yaml": ruleFile("x.example", invoiceRoute)})
	s.env = append(s.env, "TOOLGUARD_ADMIN_TOKEN=op-secret", "TOOLGUARD_ADMIN_AGENT_TOKEN=agent-secret")
	p := s.start(t)
	tests := []struct {
		name, token, want string
	}{
		{name: "none", want: "✗ admin token: the admin API needs one and TOOLGUARD_ADMIN_TOKEN is not set"},
		{name: "wrong", token: "guess", want: "✗ admin token: TOOLGUARD_ADMIN_TOKEN is not accepted"},
		{name: "agent", token: "agent-secret", want: "✔ admin token: TOOLGUARD_ADMIN_TOKEN is the agent token"},
		{name: "operator", token: "op-secret", want: "✔ admin token: TOOLGUARD_ADMIN_TOKEN is the operator token"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := []string{"TOOLGUARD_ADMIN_URL=" + p.adminURL}
			if tc.token != "" {
				env = append(env, "TOOLGUARD_ADMIN_TOKEN="+tc.token)
			}
			r := tg(t, env, "doctor", "--rules", s.rules, "--journal", filepath.Join(s.dir, "toolguard.db"))
			if !strings.Contains(r.stdout, "\n"+tc.want+"\n") {
				t.Errorf("doctor output lacks %q:\n%s", tc.want, r.stdout)
			}
		})
	}
}

// TestDoctorUnderExecFiles: doctor under exec checks exec's rules, journal
// and config file. Regression: it checked ./rules and ./toolguard.db, not
// what exec was given.
func TestDoctorUnderExecFiles(t *testing.T) {
	s := newSetup(t, map[string]string{"billing.yaml": ruleFile("x.example", invoiceRoute)})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	admin := l.Addr().String() // a port of the config file's own, free again
	l.Close()
	cfg := writeConfig(t, s.dir, "admin:\n  listen: "+admin+"\n")
	journal := filepath.Join(s.dir, "exec.db")
	r := tgIn(t, t.TempDir(), nil, "exec", "--config", cfg, "--listen", "127.0.0.1:0", "--rules", s.rules, "--journal", journal,
		"--ca-dir", filepath.Join(s.dir, "ca"), "--", binary, "doctor")
	for _, want := range []string{
		"✔ rules: 1 API, 1 route in " + s.rules + "\n",
		"✔ journal: " + journal + " is writable",
		"✔ admin API: http://" + admin + " is ready\n", // from the config file: exec gives no admin URL without an agent token
		`✔ NO_PROXY: ""; toolguard exec gives this command no admin URL`,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("doctor under exec lacks %q:\n%s%s", want, r.stdout, r.stderr)
		}
	}
}
