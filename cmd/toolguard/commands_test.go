package main

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// examples is the rules directory of the README's quick start. Paths stay
// relative so that outputs naming rule files are the same on every machine.
const examples = "../../examples/rules"

func TestRulesCheckExamples(t *testing.T) {
	cleanEnv(t)
	code, stdout, stderr := cli(t, "rules", "check", examples)
	if code != 0 || stderr != "" {
		t.Fatalf("rules check %s: exit code %d, want 0; stderr:\n%s", examples, code, stderr)
	}
	if !strings.HasPrefix(stdout, "ok: 4 APIs, ") {
		t.Errorf("stdout does not start with %q:\n%s", "ok: 4 APIs, ", stdout)
	}
	for _, route := range []string{"demo/create_invoice", "postmark/send_email", "stripe/create_payment_intent", "stripe/cancel_subscription", "github/create_issue\ttools/call /mcp/"} {
		if !strings.Contains(stdout, route) {
			t.Errorf("stdout does not list %s:\n%s", route, stdout)
		}
	}
}

func TestRulesCheckDirFromEnv(t *testing.T) {
	cleanEnv(t)
	t.Setenv("TOOLGUARD_RULES_DIR", "testdata/broken/effect")
	code, _, stderr := cli(t, "rules", "check")
	if code != 1 || !strings.Contains(stderr, "testdata/broken/effect/billing.yaml:8:13:") {
		t.Errorf("rules check with TOOLGUARD_RULES_DIR: exit code %d, stderr:\n%s", code, stderr)
	}
}

// TestRulesCheckBroken checks the exact errors of broken rule directories:
// every problem of every file as file:line:col, then one summary line.
func TestRulesCheckBroken(t *testing.T) {
	cleanEnv(t)
	tests := []struct {
		name string // testdata/broken/<name>, golden testdata/rules_check_<name>.golden
	}{
		{name: "effect"},   // an unknown value
		{name: "misspelt"}, // an unknown field, with a suggestion
		{name: "conflict"}, // two valid files that claim one host
		{name: "syntax"},   // not YAML
		{name: "several"},  // several errors in several files beside a good one
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := "testdata/broken/" + tc.name
			code, stdout, stderr := cli(t, "rules", "check", dir)
			if code != 1 {
				t.Errorf("exit code = %d, want 1", code)
			}
			if stdout != "" {
				t.Errorf("stdout = %q, want nothing", stdout)
			}
			golden(t, "rules_check_"+tc.name, stderr)
		})
	}
}

// testSecret is the journal secret of the key explain tests: with it
// the keys (which HMAC the credential) are the same on every run.
const testSecret = "toolguard-test-secret-0123456789"

// secretJournal writes testSecret beside a journal path in a temporary
// directory and returns the path.
func secretJournal(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "toolguard.db")
	if len(testSecret) != 32 {
		t.Fatalf("test secret is %d bytes, want 32", len(testSecret))
	}
	if err := os.WriteFile(path+".secret", []byte(testSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestKeyExplain(t *testing.T) {
	cleanEnv(t)
	journalPath := secretJournal(t)
	jsonBody := []string{"--header", "Content-Type: application/json"}
	tests := []struct {
		name    string // golden testdata/key_explain_<name>.golden
		args    []string
		journal string // --journal; "" = the one with the test secret
	}{
		{name: "demo_invoice", args: append([]string{"--url", "http://127.0.0.1:9099/v1/invoices",
			"--header", "Authorization: Bearer demo", "--body", "@testdata/invoice.json"}, jsonBody...)},
		{name: "demo_workflow", args: append([]string{"--url", "http://127.0.0.1:9099/v1/notifications",
			"--header", "Toolguard-Workflow: wf-7", "--body", `{"to":"ops@example.com","text":"deployed","priority":"low"}`}, jsonBody...)},
		{name: "stripe_form", args: []string{"--url", "https://api.stripe.com/v1/payment_intents",
			"--header", "Content-Type: application/x-www-form-urlencoded", "--header", "Authorization: Bearer sk_test_1",
			"--body", "currency=eur&amount=100&customer=cus_1&description=order+77&metadata[order_id]=o77"}},
		{name: "no_route", args: []string{"--url", "https://api.example.org/v1/charges", "--body", "amount=1"}},
		{name: "no_route_read", args: []string{"--url", "https://api.stripe.com/v1/charges", "--method", "GET"}},
		{name: "unlisted", args: []string{"--url", "https://api.stripe.com/v1/charges", "--header", "Authorization: Bearer sk_test_1",
			"--header", "Content-Type: application/x-www-form-urlencoded", "--body", "amount=1&expand[0]=customer"}},
		{name: "no_secret", journal: "testdata/absent.db", args: append([]string{"--url", "http://127.0.0.1:9099/v1/invoices",
			"--header", "Authorization: Bearer demo", "--body", "@testdata/invoice.json"}, jsonBody...)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			jp := tc.journal
			if jp == "" {
				jp = journalPath
			}
			args := append([]string{"key", "explain", "--rules", examples, "--journal", jp}, tc.args...)
			code, stdout, stderr := cli(t, args...)
			if code != 0 || stderr != "" {
				t.Fatalf("exit code %d, want 0; stderr:\n%s", code, stderr)
			}
			golden(t, "key_explain_"+tc.name, stdout)
		})
	}
}

// TestKeyExplainSameIntent checks the key through the CLI: what differs
// only in form (field order, whitespace, number spelling, ignored fields)
// keeps the key; what differs in intent or scope changes it.
func TestKeyExplainSameIntent(t *testing.T) {
	cleanEnv(t)
	journalPath := secretJournal(t)
	otherSecret := filepath.Join(t.TempDir(), "toolguard.db")
	if err := os.WriteFile(otherSecret+".secret", bytes.Repeat([]byte{7}, 32), 0o600); err != nil {
		t.Fatal(err)
	}
	const base = `{"customer":"cus_1","amount":4200,"currency":"eur","reference":"order-77","trace_id":"t-1"}`
	key := func(t *testing.T, journal, body string, headers ...string) string {
		t.Helper()
		args := []string{"key", "explain", "--rules", examples, "--journal", journal,
			"--url", "http://127.0.0.1:9099/v1/invoices", "--header", "Content-Type: application/json", "--body", body}
		for _, h := range headers {
			args = append(args, "--header", h)
		}
		code, stdout, stderr := cli(t, args...)
		if code != 0 {
			t.Fatalf("key explain: exit code %d; stderr:\n%s", code, stderr)
		}
		for _, line := range strings.Split(stdout, "\n") {
			if k, ok := strings.CutPrefix(line, "key:"); ok {
				return strings.TrimSpace(k)
			}
		}
		t.Fatalf("no key in output:\n%s", stdout)
		return ""
	}
	want := key(t, journalPath, base, "Authorization: Bearer demo")
	tests := []struct {
		name    string
		body    string
		header  string // Authorization unless it names another header
		journal string
		same    bool
	}{
		{name: "field order and whitespace", body: "{ \"trace_id\": \"t-1\",\n \"reference\": \"order-77\", \"currency\": \"eur\", \"amount\": 4200, \"customer\": \"cus_1\" }", same: true},
		{name: "number spelling", body: `{"customer":"cus_1","amount":4.2e3,"currency":"eur","reference":"order-77","trace_id":"t-1"}`, same: true},
		{name: "ignored field", body: `{"customer":"cus_1","amount":4200,"currency":"eur","reference":"order-77","trace_id":"t-2"}`, same: true},
		{name: "other amount", body: `{"customer":"cus_1","amount":4201,"currency":"eur","reference":"order-77","trace_id":"t-1"}`},
		{name: "extra field", body: `{"customer":"cus_1","amount":4200,"currency":"eur","reference":"order-77","trace_id":"t-1","memo":"x"}`},
		{name: "other credential", body: base, header: "Authorization: Bearer other"},
		{name: "workflow", body: base, header: "Toolguard-Workflow: wf-1"},
		{name: "other install secret", body: base, journal: otherSecret},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			headers := []string{"Authorization: Bearer demo"}
			if tc.header != "" {
				if strings.HasPrefix(tc.header, "Authorization:") {
					headers = nil
				}
				headers = append(headers, tc.header)
			}
			jp := tc.journal
			if jp == "" {
				jp = journalPath
			}
			got := key(t, jp, tc.body, headers...)
			if (got == want) != tc.same {
				t.Errorf("key = %s, base key %s; same = %v, want %v", got, want, got == want, tc.same)
			}
		})
	}
}

func TestCAInit(t *testing.T) {
	cleanEnv(t)
	dir := filepath.Join(t.TempDir(), "ca")
	code, stdout, stderr := cli(t, "ca", "init", "--dir", dir)
	if code != 0 || stderr != "" {
		t.Fatalf("first ca init: exit code %d, stderr:\n%s", code, stderr)
	}
	certPath, keyPath := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca-key.pem")
	if want := "CA created: " + certPath + "\n"; stdout != want {
		t.Errorf("first ca init: stdout = %q, want %q", stdout, want)
	}
	for _, f := range []struct {
		path string
		mode os.FileMode
	}{{certPath, 0o644}, {keyPath, 0o600}} {
		fi, err := os.Stat(f.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != f.mode {
			t.Errorf("%s: mode %v, want %v", filepath.Base(f.path), got, f.mode)
		}
	}
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		t.Fatalf("ca.pem holds no certificate:\n%s", certPEM)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if !cert.IsCA || cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		t.Errorf("ca.pem: IsCA %v, key usage %b: want a CA that signs certificates", cert.IsCA, cert.KeyUsage)
	}
	keyBefore, err := os.ReadFile(keyPath)
	if err != nil {
		t.Fatal(err)
	}

	// The second run, here through TOOLGUARD_CA_DIR, keeps what exists.
	t.Setenv("TOOLGUARD_CA_DIR", dir)
	code, stdout, stderr = cli(t, "ca", "init")
	if code != 0 || stderr != "" {
		t.Fatalf("second ca init: exit code %d, stderr:\n%s", code, stderr)
	}
	if want := "CA exists: " + certPath + "\n"; stdout != want {
		t.Errorf("second ca init: stdout = %q, want %q", stdout, want)
	}
	certAfter, _ := os.ReadFile(certPath)
	keyAfter, _ := os.ReadFile(keyPath)
	if !bytes.Equal(certAfter, certPEM) || !bytes.Equal(keyAfter, keyBefore) {
		t.Error("second ca init changed the CA")
	}

	// Half a CA is an error, never silently replaced.
	if err := os.Remove(keyPath); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = cli(t, "ca", "init")
	if code != 1 || !strings.Contains(stderr, "found only one of ca.pem and ca-key.pem") {
		t.Errorf("ca init without the key: exit code %d, want 1; stderr:\n%s", code, stderr)
	}
	if after, _ := os.ReadFile(certPath); !bytes.Equal(after, certPEM) {
		t.Error("ca init without the key replaced ca.pem")
	}
}

// TestRulesCheckWhat checks what rules check reads: a directory without
// rule files is an error, not "ok: 0 APIs"; a single file is checked;
// *.yml files are rule files; other files are named, never skipped
// silently.
func TestRulesCheckWhat(t *testing.T) {
	cleanEnv(t)
	empty := t.TempDir()
	tests := []struct {
		name     string
		path     string
		wantCode int
		golden   string // testdata/rules_check_<golden>.golden: stdout, then stderr
	}{
		{name: "empty directory", path: empty, wantCode: 1},
		{name: "no rule files", path: "testdata/rulesets/notrules", wantCode: 1, golden: "notrules"},
		{name: "yml file in a directory", path: "testdata/rulesets/yml", wantCode: 0, golden: "yml"},
		{name: "file without credential warned", path: "testdata/rulesets/nocredential", wantCode: 0, golden: "nocredential"},
		{name: "single file", path: "../../examples/rules/stripe.yaml", wantCode: 0, golden: "single"},
		{name: "single broken file", path: "testdata/broken/effect/billing.yaml", wantCode: 1, golden: "single_broken"},
		{name: "single file of another kind", path: "testdata/rulesets/notrules/demo.json", wantCode: 1, golden: "single_json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := cli(t, "rules", "check", tc.path)
			if code != tc.wantCode {
				t.Fatalf("exit code = %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, stdout, stderr)
			}
			if tc.golden != "" {
				golden(t, "rules_check_"+tc.golden, "--- stdout\n"+stdout+"--- stderr\n"+stderr)
			}
			if tc.name == "empty directory" {
				if want := "toolguard: rules check: no rule files (*.yaml, *.yml) in " + empty + ": serve would guard nothing\n"; stderr != want {
					t.Errorf("stderr = %q, want %q", stderr, want)
				}
			}
		})
	}
}
