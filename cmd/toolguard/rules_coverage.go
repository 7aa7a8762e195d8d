package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/toolguard/toolguard/rules"
	"github.com/toolguard/toolguard/rules/openapi"
)

const rulesCoverageSynopsis = "rules coverage --from-openapi SPEC [--server URL]... [--json | --markdown] FILE"

// serverList collects repeated --server flags.
type serverList []string

func (s *serverList) String() string     { return strings.Join(*s, ",") }
func (s *serverList) Set(v string) error { *s = append(*s, v); return nil }

// runRulesCoverage prints how a rule file handles every write operation of
// an OpenAPI document, and fails when a route matches no operation.
func runRulesCoverage(args []string, stdout io.Writer) error {
	var spec string
	var servers serverList
	var asJSON, markdown bool
	fl := newFlags("rules coverage", rulesCoverageSynopsis, stdout)
	fl.StringVar(&spec, "from-openapi", "", "the provider's OpenAPI 3.0 or 3.1 `file` (YAML or JSON)")
	fl.Var(&servers, "server", "a server `URL` (https://host/base) that serves every operation besides the document's own (repeatable)")
	fl.BoolVar(&asJSON, "json", false, "print JSON")
	fl.BoolVar(&markdown, "markdown", false, "print a Markdown table (as pack READMEs carry it)")
	pos, err := interleaved(fl, args)
	if err != nil {
		return err
	}
	switch {
	case spec == "":
		return usagef("rules coverage: --from-openapi SPEC is required")
	case len(pos) != 1:
		return usagef("rules coverage: want exactly one rule FILE")
	case asJSON && markdown:
		return usagef("rules coverage: --json and --markdown: give one")
	}
	file := pos[0]
	c, err := coverageOf(spec, file, servers)
	if err != nil {
		return err
	}
	switch {
	case asJSON:
		err = printJSON(stdout, struct {
			*openapi.Coverage
			Summary openapi.CoverageCounts `json:"summary"`
		}{c, c.Counts()})
	case markdown:
		_, err = stdout.Write(c.Markdown())
	default:
		err = c.WriteTable(stdout)
	}
	if err != nil {
		return err
	}
	switch len(c.Stale) {
	case 0:
	case 1:
		return fmt.Errorf("rules coverage: route %s of %s matches no operation of %s", c.Stale[0].Route, file, spec)
	default:
		return fmt.Errorf("rules coverage: %d routes of %s match no operation of %s", len(c.Stale), file, spec)
	}
	return nil
}

// coverageOf loads a spec and a rule file and matches them.
func coverageOf(spec, file string, servers []string) (*openapi.Coverage, error) {
	data, err := os.ReadFile(spec)
	if err != nil {
		return nil, fmt.Errorf("rules coverage: %w", err)
	}
	rf, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("rules coverage: %w", err)
	}
	api, err := rules.Parse(file, rf)
	if err != nil {
		return nil, fmt.Errorf("rules coverage: %w", err)
	}
	c, err := openapi.CoverageOf(data, api, openapi.CoverageOptions{Location: spec, Servers: servers})
	if err != nil {
		return nil, fmt.Errorf("rules coverage: %s: %w", spec, err)
	}
	return c, nil
}
