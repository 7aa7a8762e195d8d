package main

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// commands are every command line of the CLI, by the arguments that select
// it; TestHelpMatchesDocs checks that each one's synopsis is documented
// in the runbook's CLI section, which the README links to.
var commands = [][]string{
	{"serve"}, {"exec"}, {"doctor"},
	{"journal", "ls"}, {"journal", "show"}, {"journal", "tail"}, {"journal", "backup"},
	{"journal", "check"}, {"journal", "export"}, {"journal", "compact"}, {"journal", "migrate"},
	{"review", "ls"}, {"review", "approve"}, {"review", "resolve"},
	{"workflow", "ls"}, {"workflow", "show"}, {"workflow", "resume"}, {"report"},
	{"rules", "check"}, {"rules", "init"}, {"rules", "coverage"}, {"key", "explain"}, {"ca", "init"}, {"version"},
}

// cliDoc is the document whose "## CLI" section lists every command line.
const cliDoc = "../../docs/operations.md"

// docsCLI returns the command lines of the CLI section of cliDoc: the
// lines of its first sh block that start with "toolguard ", without the
// comments after them.
func docsCLI(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(cliDoc)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n## CLI\n")
	if !ok {
		t.Fatalf("%s has no ## CLI section", cliDoc)
	}
	_, block, ok := strings.Cut(section, "```sh\n")
	if !ok {
		t.Fatalf("the CLI section of %s has no sh block", cliDoc)
	}
	block, _, _ = strings.Cut(block, "```")
	var lines []string
	for line := range strings.SplitSeq(block, "\n") {
		line, _, _ = strings.Cut(line, " #")
		if line = strings.TrimSpace(line); strings.HasPrefix(line, "toolguard ") {
			lines = append(lines, line)
		}
	}
	return lines
}

// synopsis is the first line of a command's --help, after "Usage: ".
func synopsis(t *testing.T, args []string) string {
	t.Helper()
	code, stdout, stderr := cli(t, append(slices.Clone(args), "--help")...)
	first, _, _ := strings.Cut(stdout, "\n")
	s, ok := strings.CutPrefix(first, "Usage: ")
	if code != 0 || !ok {
		t.Fatalf("%s --help: exit code %d, first line %q; stderr:\n%s", strings.Join(args, " "), code, first, stderr)
	}
	return s
}

// The CLI section of the docs, the command's --help and the overview of
// toolguard help name each command line alike, and the docs document no
// command that does not exist.
func TestHelpMatchesDocs(t *testing.T) {
	cleanEnv(t)
	readme := docsCLI(t)
	var synopses []string
	for _, args := range commands {
		s := synopsis(t, args)
		synopses = append(synopses, s)
		if !slices.Contains(readme, s) {
			t.Errorf("%s's CLI section lacks the line\n\t%s\n(from %s --help)", cliDoc, s, strings.Join(args, " "))
		}
		if !strings.Contains(usage, "  "+s+"\n") && !strings.Contains(usage, "  "+s+"  ") {
			t.Errorf("toolguard help lacks the line\n\t%s", s)
		}
	}
	for _, line := range readme {
		if !slices.Contains(synopses, line) {
			t.Errorf("%s's CLI section has a line no command's --help prints:\n\t%s", cliDoc, line)
		}
	}
}

// The README's table of contents links every section, in order.
func TestREADMEContents(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "\n## Contents\n")
	if !ok {
		t.Fatal("README.md has no ## Contents")
	}
	contents, body, _ := strings.Cut(rest, "\n## ")
	var want []string
	for line := range strings.SplitSeq("## "+body, "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			want = append(want, "- ["+h+"](#"+headingAnchor(h)+")")
		}
	}
	var got []string
	for line := range strings.SplitSeq(contents, "\n") {
		if strings.HasPrefix(line, "- [") {
			got = append(got, line)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("README.md's contents do not list its sections; want:\n%s", strings.Join(want, "\n"))
	}
}

// Regression: the README's proxy block (now in docs/agents.md) set
// NO_PROXY=127.0.0.1:8481, which curl and Python requests ignore (they
// match hosts, not ports), and left out CURL_CA_BUNDLE, which curl prefers
// to SSL_CERT_FILE.
func TestDocsProxyVariables(t *testing.T) {
	for _, doc := range []string{"../../README.md", "../../docs/agents.md", "../../docs/operations.md", "../../deploy/kubernetes/README.md"} {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		for line := range strings.SplitSeq(text, "\n") {
			for _, word := range strings.Fields(line) {
				name, value, ok := strings.Cut(strings.Trim(word, "`"), "=")
				if !ok || !strings.EqualFold(name, "NO_PROXY") {
					continue
				}
				for host := range strings.SplitSeq(value, ",") {
					if strings.Contains(strings.Trim(host, "[]"), ":") && !strings.Contains(host, "::") {
						t.Errorf("%s: NO_PROXY entry %q has a port, which curl and requests ignore:\n\t%s", doc, host, line)
					}
				}
			}
		}
		if strings.Contains(text, "export SSL_CERT_FILE=") && !strings.Contains(text, "CURL_CA_BUNDLE=") {
			t.Errorf("%s sets SSL_CERT_FILE but not CURL_CA_BUNDLE, which curl prefers", doc)
		}
	}
}
