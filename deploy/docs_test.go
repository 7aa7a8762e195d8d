package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The runbook, the replicas guide and the Kubernetes and Helm READMEs name
// commands, metrics and hold reasons; these tests keep them in step with
// the source, which they read as text (the proxy and cmd packages are not
// imported: deploy/ must not depend on their internals).

var runbooks = []string{"../docs/operations.md", "../docs/replicas.md", "kubernetes/README.md", "helm/toolguard/README.md"}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sourceText concatenates the non-test Go files matching glob.
func sourceText(t *testing.T, glob string) string {
	t.Helper()
	files, err := filepath.Glob(glob)
	if err != nil || len(files) == 0 {
		t.Fatalf("no files match %s", glob)
	}
	var b strings.Builder
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") {
			b.WriteString(readFile(t, f))
		}
	}
	return b.String()
}

func TestRunbookMetricsExist(t *testing.T) {
	src := sourceText(t, "../metrics/*.go") + sourceText(t, "../notify/*.go") + sourceText(t, "../telemetry/*.go")
	defined := map[string]bool{}
	for _, m := range regexp.MustCompile(`Name:\s*"(toolguard_[a-z_]+)"`).FindAllStringSubmatch(src, -1) {
		defined[m[1]] = true
	}
	doc := readFile(t, "../docs/operations.md")
	used := map[string]bool{}
	for _, m := range regexp.MustCompile(`toolguard_[a-z_]+`).FindAllString(doc, -1) {
		name := m
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(m, suffix); ok && defined[base] {
				name = base
			}
		}
		used[name] = true
	}
	for name := range used {
		if !defined[name] {
			t.Errorf("operations.md uses metric %s, which none of metrics/, notify/ and telemetry/ defines", name)
		}
	}
	for _, want := range []string{
		"toolguard_requests_total", "toolguard_upstream_duration_seconds", "toolguard_journal_commit_duration_seconds",
		"toolguard_in_flight_calls", "toolguard_held_steps", "toolguard_recoveries_total", "toolguard_verifications_total",
		"toolguard_journal_size_bytes", "toolguard_sweeper_removed_total", "toolguard_rejected_total",
	} {
		if !used[want] {
			t.Errorf("operations.md does not mention metric %s", want)
		}
	}
}

func TestRunbookCoversHoldReasons(t *testing.T) {
	src := sourceText(t, "../lifecycle/*.go")
	doc := readFile(t, "../docs/operations.md")
	reasons := regexp.MustCompile(`Reason[A-Za-z]+\s*=\s*"([a-z_]+)"`).FindAllStringSubmatch(src, -1)
	if len(reasons) == 0 {
		t.Fatal("found no hold reasons in lifecycle/")
	}
	for _, m := range reasons {
		if m[1] == "resolved" { // not a hold: marks an operator's resolution
			continue
		}
		if !strings.Contains(doc, "### `"+m[1]+"`") {
			t.Errorf("operations.md has no section on hold reason %s", m[1])
		}
	}
}

// cliCommands reads the command groups and their sub-commands from the
// usage text of cmd/toolguard.
func cliCommands(t *testing.T) map[string][]string {
	t.Helper()
	src := sourceText(t, "../cmd/toolguard/*.go")
	_, usage, ok := strings.Cut(src, "const usage = `")
	if !ok {
		t.Fatal("no usage text in cmd/toolguard")
	}
	usage, _, _ = strings.Cut(usage, "`")
	word := regexp.MustCompile(`^[a-z]+$`)
	cmds := map[string][]string{}
	for _, line := range strings.Split(usage, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "toolguard" {
			continue
		}
		subs := cmds[f[1]]
		for i, tok := range f[2:] {
			if prev := f[1+i]; strings.Contains(prev, "--") && !strings.HasSuffix(prev, "]") {
				continue // a flag's value: --outcome committed|not-executed
			}
			for _, alt := range strings.Split(tok, "|") {
				if word.MatchString(alt) {
					subs = append(subs, alt)
				}
			}
		}
		cmds[f[1]] = subs
	}
	return cmds
}

func TestRunbookCommandsExist(t *testing.T) {
	cmds := cliCommands(t)
	invocation := regexp.MustCompile(`(?:^|[\s"` + "`" + `])toolguard ([a-z]+)(?: ([a-z]+))?`)
	for _, path := range runbooks {
		doc := codeOf(readFile(t, path))
		for _, m := range invocation.FindAllStringSubmatch(doc, -1) {
			group, sub := m[1], m[2]
			subs, ok := cmds[group]
			switch {
			case !ok:
				t.Errorf("%s: toolguard %s: no such command", path, group)
			case len(subs) > 0 && sub != "" && !slices.Contains(subs, sub) && !commonWord(sub):
				t.Errorf("%s: toolguard %s %s: no such sub-command (have %v)", path, group, sub, subs)
			}
		}
	}
}

// codeOf returns the commands of a Markdown text: fenced blocks and inline
// code spans that run toolguard. Prose ("toolguard restarted") is left out.
func codeOf(md string) string {
	var b strings.Builder
	inFence := false
	var prose strings.Builder
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			b.WriteString(line + "\n")
		} else {
			prose.WriteString(line + "\n")
		}
	}
	// Inline spans that are commands, not quoted messages ("is another
	// toolguard using this file?").
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(prose.String(), -1) {
		if strings.HasPrefix(m[1], "toolguard ") || strings.Contains(m[1], "-- toolguard ") {
			b.WriteString(m[1] + "\n")
		}
	}
	return b.String()
}

// commonWord is prose that may follow "toolguard <group>" in a sentence.
func commonWord(w string) bool {
	return slices.Contains([]string{"and", "or", "the", "with", "on", "to", "is", "in", "for"}, w)
}
