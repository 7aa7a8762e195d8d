package main

import (
	"fmt"
	"io"

	"github.com/toolguard/toolguard/rules"
)

const rulesHelp = `Usage: toolguard rules COMMAND

Commands:
  check [DIR]    validate every *.yaml rule file in DIR (default $TOOLGUARD_RULES_DIR or ./rules)
`

func runRules(args []string, stdout, stderr io.Writer) error {
	sub, rest, err := subcommand("rules", args, stdout, rulesHelp)
	if err != nil {
		return err
	}
	if sub != "check" {
		return usagef("rules: unknown sub-command %q\n%s", sub, rulesHelp)
	}
	fs := newFlags("rules check", "rules check [DIR]", stdout)
	pos, err := interleaved(fs, rest)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usagef("rules check: want at most one DIR")
	}
	dir := envOr("TOOLGUARD_RULES_DIR", "./rules")
	if len(pos) == 1 {
		dir = pos[0]
	}
	set, err := rules.Load(dir)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return fmt.Errorf("rules check: %s has errors", dir)
	}
	routes := 0
	for _, a := range set.APIs {
		routes += len(a.Routes)
	}
	fmt.Fprintf(stdout, "ok: %d APIs, %d routes in %s\n", len(set.APIs), routes, dir)
	for _, a := range set.APIs {
		for _, r := range a.Routes {
			fmt.Fprintf(stdout, "  %s/%s\t%s %s\t%s\n", a.Name, r.Name, r.Method, r.Pattern, r.Effect)
		}
	}
	return nil
}
