package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// urlScheme starts a link that is a URL, not a path in the repository.
var urlScheme = regexp.MustCompile(`^[a-z]+:`)

// mdLink is a Markdown link or image: its text (which may hold brackets
// and span lines) and its target, up to a space or the closing parenthesis.
var mdLink = regexp.MustCompile(`!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// Every relative link of the repository's Markdown files leads to a file
// that exists and, when it names a #fragment, to a heading of that file:
// the README points into docs/, and sections move between files.
func TestMarkdownLinks(t *testing.T) {
	const root = "../.."
	var docs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "testdata", "bin", "artifacts":
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".md") {
			docs = append(docs, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) == 0 {
		t.Fatal("found no Markdown files")
	}
	anchors := map[string]map[string]bool{}
	for _, doc := range docs {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(root, doc)
		for _, m := range mdLink.FindAllStringSubmatch(prose(string(data)), -1) {
			target := m[2]
			if urlScheme.MatchString(target) {
				continue // a URL
			}
			path, frag, _ := strings.Cut(target, "#")
			dest := doc
			if path != "" {
				dest = filepath.Join(filepath.Dir(doc), path)
			}
			info, err := os.Stat(dest)
			if err != nil {
				t.Errorf("%s: link %s: %v", name, target, err)
				continue
			}
			if frag == "" {
				continue
			}
			if info.IsDir() || !strings.HasSuffix(dest, ".md") {
				t.Errorf("%s: link %s: a #fragment on something that is not a Markdown file", name, target)
				continue
			}
			if anchors[dest] == nil {
				text, err := os.ReadFile(dest)
				if err != nil {
					t.Fatal(err)
				}
				anchors[dest] = headingAnchors(string(text))
			}
			if !anchors[dest][frag] {
				t.Errorf("%s: link %s: %s has no heading with the anchor #%s", name, target, filepath.Base(dest), frag)
			}
		}
	}
}

// prose returns md without its fenced code blocks and without the inline
// code spans that hold no link, so that code is not read as links.
func prose(md string) string {
	var b strings.Builder
	fence := false
	span := regexp.MustCompile("`[^`]*`")
	for line := range strings.SplitSeq(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
			b.WriteString("\n")
			continue
		}
		if !fence {
			b.WriteString(span.ReplaceAllStringFunc(line, func(s string) string {
				if strings.Contains(s, "](") {
					return s
				}
				return ""
			}))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// headingAnchors returns the anchors GitHub gives the headings of md: the
// heading's anchor, then -1, -2... for later headings with the same one.
func headingAnchors(md string) map[string]bool {
	heading := regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	seen := map[string]int{}
	set := map[string]bool{}
	fence := false
	for line := range strings.SplitSeq(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
			continue
		}
		m := heading.FindStringSubmatch(line)
		if fence || m == nil {
			continue
		}
		a := headingAnchor(m[1])
		if n := seen[a]; n > 0 {
			set[a+"-"+strconv.Itoa(n)] = true
		} else {
			set[a] = true
		}
		seen[a]++
	}
	return set
}

// headingAnchor is GitHub's anchor of one heading: the text of its links,
// lower case, spaces to hyphens, every other character but letters,
// digits, hyphens and underscores dropped.
func headingAnchor(heading string) string {
	heading = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// GitHub's anchors, as the README's contents and the docs' links use them.
func TestHeadingAnchor(t *testing.T) {
	for _, tc := range []struct{ heading, want string }{
		{"Step states", "step-states"},
		{"Recovery of a `started` step that is not in flight", "recovery-of-a-started-step-that-is-not-in-flight"},
		{"Run an agent behind it: `toolguard exec`", "run-an-agent-behind-it-toolguard-exec"},
		{"`abandoned` (hold `needs_review`, status `started`)", "abandoned-hold-needs_review-status-started"},
		{"Journal backends: bbolt or PostgreSQL", "journal-backends-bbolt-or-postgresql"},
		{"Upgrading: this version changed the canonical form", "upgrading-this-version-changed-the-canonical-form"},
		{"See [the runbook](docs/operations.md)", "see-the-runbook"},
	} {
		if got := headingAnchor(tc.heading); got != tc.want {
			t.Errorf("headingAnchor(%q) = %q, want %q", tc.heading, got, tc.want)
		}
	}
}
