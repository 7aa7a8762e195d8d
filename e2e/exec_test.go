package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"github.com/toolguard/toolguard/internal/skipped"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// pythonEnvPost is urllib with nothing of its own: the proxy and the CA
// bundle come from the environment (SSL_CERT_FILE via OpenSSL's default
// paths).
const pythonEnvPost = `
import json, sys, urllib.request
req = urllib.request.Request(sys.argv[1], data=sys.argv[2].encode(), method="POST",
    headers={"Content-Type": "application/json", "Authorization": "Bearer k1"})
with urllib.request.urlopen(req, timeout=30) as r:
    print(json.dumps({"status": r.status, "outcome": r.headers.get("Toolguard-Outcome") or "",
        "replayed": r.headers.get("Idempotent-Replayed") or "", "key": r.headers.get("Toolguard-Key") or "",
        "body": r.read().decode()}))
`

// execSetup is a toolguard directory for exec: rules for a TLS upstream,
// and the flags serve would take. exec names the admin listener localhost
// in NO_PROXY, so the upstream on 127.0.0.1 is still reached through the
// proxy.
func execSetup(t *testing.T) (*upstream, []string) {
	t.Helper()
	up := newUpstream(t, true)
	s := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), invoiceRoute)})
	cfg := writeConfig(t, s.dir, "upstream:\n  ca_file: "+up.caPEM(t, s.dir)+"\n")
	return up, []string{"exec", "--config", cfg, "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
		"--rules", s.rules, "--journal", filepath.Join(s.dir, "toolguard.db"), "--ca-dir", filepath.Join(s.dir, "ca")}
}

// clientAnswer decodes the JSON line a client script printed.
func clientAnswer(t *testing.T, out string) answer {
	t.Helper()
	var a struct {
		Status                       int
		Outcome, Replayed, Key, Body string
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &a); err != nil {
		t.Fatalf("client output %q: %v", out, err)
	}
	return answer{status: a.Status, outcome: a.Outcome, replayed: a.Replayed, key: a.Key, body: a.Body}
}

// TestExecClients runs real clients under toolguard exec with no proxy or
// CA variables of their own: the first run is forwarded, the second (a
// new process, the same intent) is replayed from the journal.
func TestExecClients(t *testing.T) {
	body := `{"customer":"cus_1","amount":7,"trace_id":"t1"}`
	tests := []struct {
		name, tool string
		command    func(t *testing.T, url string) []string
		parse      func(t *testing.T, out string) answer
	}{
		{name: "curl", tool: "curl",
			command: func(t *testing.T, url string) []string {
				return []string{"curl", "-sS", "-i", "--suppress-connect-headers", "--max-time", "30", "-H", "Content-Type: application/json",
					"-H", "Authorization: Bearer k1", "--data-binary", body, url}
			},
			parse: func(t *testing.T, out string) answer {
				resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(out)), nil)
				if err != nil {
					t.Fatalf("curl answer %q: %v", out, err)
				}
				return answerOf(resp)
			}},
		{name: "python urllib", tool: "python3",
			command: func(t *testing.T, url string) []string { return []string{"python3", "-c", pythonEnvPost, url, body} },
			parse:   clientAnswer},
		{name: "node undici EnvHttpProxyAgent", tool: "node",
			command: func(t *testing.T, url string) []string {
				return []string{"node", "testdata/node/env_client.js", undiciDir(t), url, body}
			},
			parse: clientAnswer},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := exec.LookPath(tc.tool); err != nil {
				skipped.Skip(t, tc.tool, tc.tool+" is not installed")
			}
			up, args := execSetup(t)
			command := tc.command(t, up.URL+"/v1/invoices")
			var answers []answer
			for run, want := range []string{"1 guarded (1 forwarded, 0 replayed", "1 guarded (0 forwarded, 1 replayed"} {
				r := tg(t, nil, append(append(args, "--"), command...)...)
				if r.code != 0 {
					t.Fatalf("run %d: exit code %d\nstdout:\n%s\nstderr:\n%s", run, r.code, r.stdout, r.stderr)
				}
				if !strings.Contains(r.stderr, "toolguard: "+want) || !strings.Contains(r.stderr, "review ls --journal") {
					t.Errorf("run %d: summary %q, want %q and the command to see holds", run, r.stderr, want)
				}
				answers = append(answers, tc.parse(t, r.stdout))
			}
			checkDuplicate(t, up, answers[0], answers[1])
		})
	}
}

// TestExecEnvironment checks the variables the command sees and that exec
// exits with the command's code.
func TestExecEnvironment(t *testing.T) {
	_, args := execSetup(t)
	r := tg(t, []string{"NO_PROXY=internal.example:8080", "CURL_CA_BUNDLE=/nonexistent", "NODE_OPTIONS=--max-old-space-size=512"},
		append(args, "--", "sh", "-c", `env | grep -E '^(HTTPS?_PROXY|https?_proxy|NO_PROXY|no_proxy|SSL_CERT_FILE|CURL_CA_BUNDLE|REQUESTS_CA_BUNDLE|NODE_EXTRA_CA_CERTS|NODE_USE_ENV_PROXY|NODE_OPTIONS|TOOLGUARD_ADMIN_URL|TOOLGUARD_RULES_DIR)=' | sort; grep -c 'BEGIN CERTIFICATE' "$SSL_CERT_FILE"; exit 7`)...)
	if r.code != 7 {
		t.Fatalf("exit code %d, want the command's 7\n%s", r.code, r.stderr)
	}
	env := map[string]string{}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	for _, l := range lines[:len(lines)-1] {
		k, v, _ := strings.Cut(l, "=")
		env[k] = v
	}
	proxyURL := env["HTTPS_PROXY"]
	if !strings.HasPrefix(proxyURL, "http://127.0.0.1:") {
		t.Fatalf("HTTPS_PROXY = %q", proxyURL)
	}
	for _, k := range []string{"HTTP_PROXY", "http_proxy", "https_proxy"} {
		if env[k] != proxyURL {
			t.Errorf("%s = %q, want %q", k, env[k], proxyURL)
		}
	}
	if env["NO_PROXY"] != "internal.example" || env["no_proxy"] != env["NO_PROXY"] {
		t.Errorf("NO_PROXY = %q, no_proxy = %q; want host-only entries: internal.example (no admin listener: no agent token)", env["NO_PROXY"], env["no_proxy"])
	}
	bundle := env["SSL_CERT_FILE"]
	for _, k := range []string{"CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS"} {
		if env[k] != bundle {
			t.Errorf("%s = %q, want the merged bundle %q", k, env[k], bundle)
		}
	}
	if env["NODE_USE_ENV_PROXY"] != "1" || env["TOOLGUARD_ADMIN_URL"] != "" {
		t.Errorf("NODE_USE_ENV_PROXY = %q, TOOLGUARD_ADMIN_URL = %q; want 1 and no admin URL", env["NODE_USE_ENV_PROXY"], env["TOOLGUARD_ADMIN_URL"])
	}
	// The system roots and toolguard's CA: more than one certificate.
	if n := lines[len(lines)-1]; n == "0" || n == "1" {
		t.Errorf("the bundle holds %s certificates, want the system roots plus toolguard's CA", n)
	}
	if _, err := os.Stat(bundle); err == nil {
		t.Errorf("the bundle %s outlived exec", bundle)
	}
	// The caller's Node options, then the preload that routes fetch through
	// the proxy before Node 24, beside the bundle.
	preload := filepath.Join(filepath.Dir(bundle), "toolguard-fetch-proxy.cjs")
	if want := `--max-old-space-size=512 --require="` + preload + `"`; env["NODE_OPTIONS"] != want {
		t.Errorf("NODE_OPTIONS = %q, want %q", env["NODE_OPTIONS"], want)
	}
	if rules := args[slices.Index(args, "--rules")+1]; env["TOOLGUARD_RULES_DIR"] != rules {
		t.Errorf("TOOLGUARD_RULES_DIR = %q, want exec's %s", env["TOOLGUARD_RULES_DIR"], rules)
	}
}

// TestExecSignals forwards SIGTERM to the command and exits with its code.
func TestExecSignals(t *testing.T) {
	_, args := execSetup(t)
	cmd := exec.Command(binary, append(args, "--", "sh", "-c", `trap 'echo got TERM; exit 42' TERM; echo ready; while :; do sleep 0.05; done`)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	stdout, _ := cmd.StdoutPipe()
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() || sc.Text() != "ready" {
		t.Fatalf("the command did not start: %q\n%s", sc.Text(), stderr.String())
	}
	cmd.Process.Signal(syscall.SIGTERM)
	sc.Scan()
	if sc.Text() != "got TERM" {
		t.Errorf("the command saw %q, want got TERM", sc.Text())
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("exec did not exit after its command did")
	}
	if code := cmd.ProcessState.ExitCode(); code != 42 {
		t.Errorf("exit code %d, want the command's 42\n%s", code, stderr.String())
	}
}

// TestExecRunningProxy uses a toolguard started elsewhere (--proxy).
func TestExecRunningProxy(t *testing.T) {
	up := newUpstream(t, true)
	s := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), invoiceRoute)})
	s.args = append(s.args, "--config", writeConfig(t, s.dir, "upstream:\n  ca_file: "+up.caPEM(t, s.dir)+"\n"))
	p := s.start(t)
	body := `{"customer":"cus_2","amount":9}`
	var answers []answer
	for run := range 2 {
		r := tg(t, p.cliEnv(), "exec", "--proxy", p.proxyURL.String(), "--admin", p.adminURL, "--ca", p.caFile, "--",
			"python3", "-c", pythonEnvPost, up.URL+"/v1/invoices", body)
		if r.code != 0 {
			t.Fatalf("run %d: exit code %d\n%s", run, r.code, r.stderr)
		}
		if !strings.Contains(r.stderr, "toolguard: 1 guarded") || !strings.Contains(r.stderr, "review ls --admin "+p.adminURL) {
			t.Errorf("run %d: summary %q", run, r.stderr)
		}
		answers = append(answers, clientAnswer(t, r.stdout))
	}
	checkDuplicate(t, up, answers[0], answers[1])
}

// TestExecGivesNoOperatorToken: the command exec runs never gets the
// operator token, nor an admin URL it could approve through. Regression:
// exec set TOOLGUARD_ADMIN_URL and NO_PROXY=localhost with no admin token
// configured, and the agent approved its own held call with curl.
func TestExecGivesNoOperatorToken(t *testing.T) {
	const opToken, agentToken = "op-secret-e2e-0123", "agent-secret-e2e-0123"
	zero := strings.Repeat("0", 64)
	script := `env; if [ -n "$TOOLGUARD_ADMIN_URL" ]; then
  for bearer in "$TOOLGUARD_AGENT_TOKEN" ""; do
    curl -s -o /dev/null -w 'approve %{http_code}\n' -X POST -H "Authorization: Bearer $bearer" "$TOOLGUARD_ADMIN_URL/v1/steps/` + zero + `/approve"
  done
fi`
	tests := []struct {
		name      string
		env       []string
		wantAdmin bool   // TOOLGUARD_ADMIN_URL and TOOLGUARD_AGENT_TOKEN given
		operator  string // the operator token, "" = the generated one
	}{
		{name: "generated operator token"},
		{name: "configured tokens", env: []string{"TOOLGUARD_ADMIN_TOKEN=" + opToken, "TOOLGUARD_ADMIN_AGENT_TOKEN=" + agentToken},
			wantAdmin: true, operator: opToken},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, args := execSetup(t)
			dir := filepath.Dir(args[len(args)-3]) // --journal's directory
			r := tg(t, tc.env, append(args, "--", "sh", "-c", script)...)
			if r.code != 0 {
				t.Fatalf("exit code %d\n%s", r.code, r.stderr)
			}
			operator := tc.operator
			if operator == "" {
				b, err := os.ReadFile(filepath.Join(dir, "admin-token"))
				if err != nil {
					t.Fatalf("exec's toolguard generated no operator token: %v", err)
				}
				operator = strings.TrimSpace(string(b))
				if !strings.Contains(r.stderr, filepath.Join(dir, "admin-token")) {
					t.Errorf("exec's first start does not say where the operator token is:\n%s", r.stderr)
				}
			}
			if strings.Contains(r.stdout, operator) || strings.Contains(r.stderr, operator) {
				t.Errorf("the command's output or terminal holds the operator token:\n%s\n%s", r.stdout, r.stderr)
			}
			// Where exec's rules, journal and config file are is no secret
			// (the output holds no operator token, checked above).
			files := map[string]bool{"TOOLGUARD_RULES_DIR": true, "TOOLGUARD_JOURNAL_PATH": true, "TOOLGUARD_CONFIG": true}
			env := map[string]string{}
			for _, l := range strings.Split(r.stdout, "\n") {
				if k, v, ok := strings.Cut(l, "="); ok && strings.HasPrefix(k, "TOOLGUARD_") && !files[k] {
					env[k] = v
				}
			}
			for k := range env {
				if strings.HasPrefix(k, "TOOLGUARD_ADMIN_") && k != "TOOLGUARD_ADMIN_URL" {
					t.Errorf("the command got %s", k)
				}
			}
			if !tc.wantAdmin {
				if len(env) != 0 || strings.Contains(r.stdout, "approve ") {
					t.Errorf("the command got %v, want no admin URL or token", env)
				}
				return
			}
			if !strings.HasPrefix(env["TOOLGUARD_ADMIN_URL"], "http://localhost:") || env["TOOLGUARD_AGENT_TOKEN"] != agentToken {
				t.Errorf("TOOLGUARD_ADMIN_URL = %q, TOOLGUARD_AGENT_TOKEN = %q; want the admin URL with the agent token", env["TOOLGUARD_ADMIN_URL"], env["TOOLGUARD_AGENT_TOKEN"])
			}
			if !strings.Contains(r.stdout, "approve 403\napprove 401\n") {
				t.Errorf("approve with the agent token, then with an empty bearer: want 403 then 401, got:\n%s", r.stdout)
			}
		})
	}
}

// nodeFetchPost is a Node agent with nothing of its own: the built-in
// fetch with no dispatcher and no proxy or CA settings. It POSTs one intent
// twice and prints each answer as a JSON line.
const nodeFetchPost = `
const [url, body] = process.argv.slice(1);
(async () => {
  for (let i = 0; i < 2; i++) {
    const r = await fetch(url, {method: 'POST', headers: {'content-type': 'application/json', authorization: 'Bearer k1'}, body});
    console.log(JSON.stringify({status: r.status, outcome: r.headers.get('toolguard-outcome') || '',
      replayed: r.headers.get('idempotent-replayed') || '', key: r.headers.get('toolguard-key') || '', body: await r.text()}));
  }
})().catch((e) => { console.error('fetch failed:', (e.cause && e.cause.message) || e.message); process.exit(1); });
`

// nodeFetchHonoursEnvProxy reports whether the installed Node's built-in
// fetch honours HTTPS_PROXY under NODE_USE_ENV_PROXY=1 (Node 24+, 22.21+).
func nodeFetchHonoursEnvProxy(t *testing.T) bool {
	t.Helper()
	out, err := exec.Command("node", "-p", "process.versions.node").Output()
	if err != nil {
		t.Fatalf("node -p process.versions.node: %v", err)
	}
	var major, minor int
	fmt.Sscanf(strings.TrimSpace(string(out)), "%d.%d", &major, &minor)
	return major >= 24 || (major == 22 && minor >= 21)
}

const nodeBypassWarning = "fetch calls will bypass toolguard"

// TestExecNodeFetch: Node's built-in fetch goes through toolguard under
// exec. Regression: Node before 24 ignores HTTPS_PROXY in fetch even with
// NODE_USE_ENV_PROXY=1, so a plain fetch agent made its calls around the
// proxy and exec said "0 guarded"; exec now preloads undici's
// EnvHttpProxyAgent, found as the program would find undici.
func TestExecNodeFetch(t *testing.T) {
	modules := filepath.Dir(filepath.Dir(undiciDir(t))) // the directory whose node_modules holds undici
	body := `{"customer":"cus_1","amount":7,"trace_id":"t1"}`
	t.Run("undici in the working directory", func(t *testing.T) {
		up, args := execSetup(t)
		r := tgIn(t, modules, nil, append(args, "--", "node", "-e", nodeFetchPost, up.URL+"/v1/invoices", body)...)
		if r.code != 0 {
			t.Fatalf("exit code %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if len(lines) != 2 {
			t.Fatalf("want two answers, got:\n%s", r.stdout)
		}
		checkDuplicate(t, up, clientAnswer(t, lines[0]), clientAnswer(t, lines[1]))
		if !strings.Contains(r.stderr, "toolguard: 2 guarded (1 forwarded, 1 replayed") || strings.Contains(r.stderr, nodeBypassWarning) {
			t.Errorf("stderr %q: want 2 guarded, forwarded then replayed, and no bypass warning", r.stderr)
		}
	})
	t.Run("no undici", func(t *testing.T) {
		up, args := execSetup(t)
		// Two Node processes, one warning.
		script := `node -e "$0" "$1" "$2"; node -e "$0" "$1" "$2"`
		r := tgIn(t, t.TempDir(), nil, append(args, "--", "sh", "-c", script, nodeFetchPost, up.URL+"/v1/invoices", body)...)
		if nodeFetchHonoursEnvProxy(t) {
			if r.code != 0 || strings.Contains(r.stderr, nodeBypassWarning) || up.effects.Load() != 1 {
				t.Errorf("Node honours NODE_USE_ENV_PROXY in fetch: want exit 0, 1 effect and no warning; got %d, %d effects\n%s", r.code, up.effects.Load(), r.stderr)
			}
			return
		}
		if n := strings.Count(r.stderr, nodeBypassWarning); n != 1 {
			t.Errorf("%d bypass warnings, want one line:\n%s", n, r.stderr)
		}
		if !strings.Contains(r.stderr, "npm install undici") || !strings.Contains(r.stderr, "toolguard: 0 guarded") ||
			!strings.Contains(r.stderr, "; Node's fetch went around toolguard") {
			t.Errorf("stderr lacks the fix or the summary's note:\n%s", r.stderr)
		}
		// Around the proxy, Node does not trust the test upstream's CA.
		if r.code == 0 || up.effects.Load() != 0 {
			t.Errorf("exit code %d, %d upstream effects; want a failed call and none", r.code, up.effects.Load())
		}
	})
}
