package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/toolguard/toolguard/rules"
	"github.com/toolguard/toolguard/rules/samples"
)

const rulesHelp = `Usage: toolguard rules COMMAND

Commands:
  check [DIR|FILE] [--sample FILE|DIR]
                 validate every rule file (*.yaml, *.yml) in DIR (default $TOOLGUARD_RULES_DIR or ./rules),
                 or the one rule FILE; a directory without rule files is an error. With --sample, also key
                 every sample request (JSON lines; a DIR means its *.jsonl files) and report each required
                 key field a sample lacks, and same_key_as / key_differs_from pairs whose keys disagree;
                 list the samples that would be held for an operator (approval, approval.when, budget)
  init --from-openapi SPEC [--api NAME] [-o FILE] [--force]
                 write a starting rule file for the POST, PUT, PATCH and DELETE operations of an OpenAPI 3
                 document (YAML or JSON), with TODO(toolguard) comments where a human must decide
  coverage --from-openapi SPEC [--server URL]... [--json | --markdown] FILE
                 for every POST, PUT, PATCH and DELETE operation of the provider's OpenAPI document, print
                 the route of the rule FILE that handles it, or "unlisted policy", or "passes"; list the
                 routes that match no operation of the document (a typo or a stale path) and exit 1 if any
`

func runRules(args []string, stdout, stderr io.Writer) error {
	sub, rest, err := subcommand("rules", args, stdout, rulesHelp)
	if err != nil {
		return err
	}
	switch sub {
	case "init":
		return runRulesInit(rest, stdout)
	case "coverage":
		return runRulesCoverage(rest, stdout)
	}
	if sub != "check" {
		return usagef("rules: unknown sub-command %q\n%s", sub, rulesHelp)
	}
	var sample string
	fs := newFlags("rules check", "rules check [DIR|FILE] [--sample FILE|DIR]", stdout)
	fs.StringVar(&sample, "sample", "", "JSON-lines `file` (or directory of *.jsonl files) of sample requests "+
		"({\"name\",\"method\",\"url\",\"content_type\",\"headers\",\"body\",\"same_key_as\",\"key_differs_from\"})")
	pos, err := interleaved(fs, rest)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usagef("rules check: want at most one DIR or FILE")
	}
	path := envOr("TOOLGUARD_RULES_DIR", "./rules")
	if len(pos) == 1 {
		path = pos[0]
	}
	set, err := loadRules(path, stdout)
	if err != nil {
		var es *rules.Errors
		if errors.As(err, &es) {
			fmt.Fprintln(stderr, err)
			return fmt.Errorf("rules check: %s has errors", path)
		}
		return fmt.Errorf("rules check: %w", err)
	}
	for _, w := range set.Warnings() {
		fmt.Fprintln(stderr, w)
	}
	if sample != "" {
		if err := checkSamples(set, sample, stdout, stderr); err != nil {
			return err
		}
	}
	printRoutes(stdout, set, path)
	return nil
}

// loadRules loads a directory of rule files, or one rule file. A directory
// without rule files is an error, and its other files are named on out.
func loadRules(path string, out io.Writer) (*rules.Set, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("load rules: %w", err)
	}
	if !fi.IsDir() {
		if !rules.IsRuleFileName(path) {
			return nil, fmt.Errorf("%s: not a rule file name (serve loads only *.yaml and *.yml files)", path)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("load rules: %w", err)
		}
		api, err := rules.Parse(path, data)
		if err != nil {
			return nil, err
		}
		return rules.NewSet(api)
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return nil, fmt.Errorf("load rules: %w", err)
	}
	n := 0
	for _, e := range ents {
		switch {
		case e.IsDir():
		case rules.IsRuleFileName(e.Name()):
			n++
		default:
			fmt.Fprintf(out, "note: %s is not read (rule files end in .yaml or .yml)\n", filepath.Join(path, e.Name()))
		}
	}
	if n == 0 {
		return nil, fmt.Errorf("no rule files (*.yaml, *.yml) in %s: serve would guard nothing", path)
	}
	return rules.Load(path)
}

func printRoutes(w io.Writer, set *rules.Set, path string) {
	routes := 0
	for _, a := range set.APIs {
		routes += len(a.Routes)
	}
	fmt.Fprintf(w, "ok: %d APIs, %d routes in %s\n", len(set.APIs), routes, path)
	for _, a := range set.APIs {
		for _, r := range a.Routes {
			fmt.Fprintf(w, "  %s/%s\t%s %s\t%s\n", a.Name, r.Name, r.Method, r.Pattern, r.Effect)
		}
		for _, name := range a.ToolNames() {
			fmt.Fprintf(w, "  %s/%s\ttools/call %s\t%s\n", a.Name, name, a.MCP.Path, a.Tool(name).Effect)
		}
		if a.MCP == nil {
			fmt.Fprintf(w, "  %s: unlisted: %s\n", a.Name, unlistedSummary(a))
		}
	}
}

// unlistedSummary says what happens to writes to a's hosts that no route
// matches.
func unlistedSummary(a *rules.API) string {
	if a.Unlisted != rules.UnlistedGuard {
		return a.Unlisted.String() + " (writes no route matches pass through unguarded)"
	}
	s := a.Unlisted.String() + " (writes no route matches are irreversible, keyed on the whole request"
	if ni := a.NativeIdempotency; ni != nil {
		s += ", the key sent as " + ni.Header
	}
	return s + ")"
}

// checkSamples keys every sample request and reports its problems on
// stderr; routes without samples or pairs are noted on stdout.
func checkSamples(set *rules.Set, path string, stdout, stderr io.Writer) error {
	ss, err := readSamples(path)
	if err != nil {
		return err
	}
	rep := samples.Check(set, ss, &rules.Deriver{})
	for _, p := range rep.Problems {
		fmt.Fprintln(stderr, p)
	}
	if len(rep.Problems) > 0 {
		return fmt.Errorf("rules check: %d problems with samples", len(rep.Problems))
	}
	for _, h := range rep.Held {
		fmt.Fprintln(stdout, "held: "+h)
	}
	for _, g := range rep.Gaps(set) {
		fmt.Fprintln(stdout, "note: "+g)
	}
	return nil
}

// readSamples reads a samples file, or every *.jsonl file of a directory.
func readSamples(path string) ([]samples.Sample, error) {
	files := []string{path}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		files, _ = filepath.Glob(filepath.Join(path, "*.jsonl"))
		if len(files) == 0 {
			return nil, fmt.Errorf("read samples: no *.jsonl files in %s", path)
		}
		slices.Sort(files)
	}
	var all []samples.Sample
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			return nil, fmt.Errorf("read samples: %w", err)
		}
		s, err := samples.Read(file, f)
		f.Close()
		if err != nil {
			return nil, err
		}
		all = append(all, s...)
	}
	return all, nil
}
