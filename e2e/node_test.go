package e2e

import (
	"encoding/json"
	"github.com/toolguard/toolguard/internal/skipped"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// undiciDir is where .ci/run installs undici (npm install in
// e2e/testdata/node); TOOLGUARD_UNDICI overrides it.
func undiciDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("TOOLGUARD_UNDICI")
	if dir == "" {
		dir, _ = filepath.Abs("testdata/node/node_modules/undici")
	}
	if _, err := exec.LookPath("node"); err != nil {
		skipped.Skip(t, "node", "node is not installed; .ci/run installs what this test needs")
	}
	if _, err := os.Stat(filepath.Join(dir, "package.json")); err != nil {
		skipped.Skip(t, "undici (npm install in e2e/testdata/node)", "undici is not installed (cd e2e/testdata/node && npm install); .ci/run installs it")
	}
	return dir
}

// TestNodeUndici drives toolguard with a real undici client, which sends
// CONNECT even for http:// URLs and then speaks plain HTTP in the tunnel.
func TestNodeUndici(t *testing.T) {
	dir := undiciDir(t)
	for _, scheme := range []string{"http", "https"} {
		t.Run(scheme, func(t *testing.T) {
			up := newUpstream(t, scheme == "https")
			s := newSetup(t, map[string]string{"billing.yaml": ruleFile(up.host(), invoiceRoute)})
			if scheme == "https" {
				s.args = append(s.args, "--config", writeConfig(t, s.dir, "upstream:\n  ca_file: "+up.caPEM(t, s.dir)+"\n"))
			}
			p := s.start(t)
			args := []string{"testdata/node/undici_client.js", dir, p.proxyURL.String(), up.URL + "/v1/invoices"}
			if scheme == "https" {
				args = append(args, p.caFile)
			}
			out, err := exec.Command("node", args...).CombinedOutput()
			if err != nil {
				t.Fatalf("node: %v\n%s", err, out)
			}
			var answers []map[string]any
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				var a map[string]any
				if err := json.Unmarshal([]byte(line), &a); err != nil {
					t.Fatalf("node output %q: %v", line, err)
				}
				answers = append(answers, a)
			}
			if len(answers) != 2 || answers[0]["outcome"] != "forwarded" || answers[1]["outcome"] != "replayed" || answers[0]["body"] != answers[1]["body"] {
				t.Fatalf("answers = %v", answers)
			}
			if got := up.effects.Load(); got != 1 {
				t.Fatalf("upstream effects = %d, want 1", got)
			}
		})
	}
}
