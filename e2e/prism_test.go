package e2e

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolguard/toolguard/internal/skipped"
)

// prismModules is where .ci/run installs Prism and the API descriptions it
// serves (e2e/testdata/prism/package.json).
var prismModules = filepath.Join("testdata", "prism", "node_modules")

// The providers' own OpenAPI descriptions, as their npm packages ship them.
var (
	// GitHub's REST API (api.github.com, and uploads.github.com for
	// release assets), from @octokit/openapi.
	githubOpenAPI = filepath.Join(prismModules, "@octokit", "openapi", "generated", "api.github.com.json")
	// Twilio's REST API (api.twilio.com/2010-04-01), from twilio-oai as
	// Twilio's @twilio-alpha/mcp ships it.
	twilioOpenAPI = filepath.Join(prismModules, "@twilio-alpha", "mcp", "twilio-oai", "spec", "json", "twilio_api_v2010.json")
)

// prismFiles finds Prism and the descriptions named. Missing, the test
// fails in CI and skips elsewhere.
func prismFiles(t *testing.T, specs ...string) string {
	t.Helper()
	bin := filepath.Join(prismModules, ".bin", "prism")
	for _, p := range append([]string{bin}, specs...) {
		if _, err := os.Stat(p); err != nil {
			const how = "npm install --prefix e2e/testdata/prism"
			if os.Getenv("CI") != "" {
				t.Fatalf("%s missing: %s", p, how)
			}
			skipped.Skip(t, "Prism (e2e/testdata/prism)", p+" missing: "+how)
		}
	}
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node not found: Prism needs Node.js")
		}
		skipped.Skip(t, "Node.js", "node not found: Prism needs Node.js")
	}
	abs, err := filepath.Abs(bin)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// startPrism runs Prism's mock server for an OpenAPI description on a
// free loopback port and returns its address. Prism answers each request
// the description allows with the description's example, and refuses one
// it does not allow (422, 400, 401...) with what is wrong; it keeps no
// state. Its log is shown when the test fails.
func startPrism(t *testing.T, spec string) string {
	t.Helper()
	bin := prismFiles(t, spec)
	addr := freePort(t)
	host, port, _ := strings.Cut(addr, ":")
	cmd := exec.Command(bin, "mock", "--host", host, "--port", port, spec)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatalf("start prism: %v", err)
	}
	logs := &syncBuffer{}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		pw.Close()
		if t.Failed() {
			t.Logf("prism (%s), its errors:\n%s", filepath.Base(spec), prismErrors(logs.String(), 60))
		}
	})
	listening := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		announced := false
		for sc.Scan() {
			logs.Write(append(sc.Bytes(), '\n'))
			if !announced && strings.Contains(sc.Text(), "Prism is listening on") {
				announced = true
				close(listening)
			}
		}
		io.Copy(io.Discard, pr)
	}()
	select {
	case <-listening:
		return addr
	case <-time.After(2 * time.Minute):
		t.Fatalf("prism did not listen for %s:\n%s", spec, tail(logs.String(), 20))
		return ""
	}
}

// prismErrors is the last n lines of Prism's log that report an error or
// a request it found invalid (the violations), leaving out what it finds
// wrong with the description's own examples.
func prismErrors(log string, n int) string {
	var errs []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "✖") && !strings.Contains(l, "Response body") {
			errs = append(errs, l)
		}
	}
	return tail(strings.Join(errs, "\n"), n)
}
