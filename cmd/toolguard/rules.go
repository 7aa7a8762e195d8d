package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/toolguard/toolguard/rules"
)

const rulesHelp = `Usage: toolguard rules COMMAND

Commands:
  check [DIR] [--sample FILE]
                 validate every *.yaml rule file in DIR (default $TOOLGUARD_RULES_DIR or ./rules);
                 with --sample, also check that key fields exist in sample requests (JSON lines)
`

func runRules(args []string, stdout, stderr io.Writer) error {
	sub, rest, err := subcommand("rules", args, stdout, rulesHelp)
	if err != nil {
		return err
	}
	if sub != "check" {
		return usagef("rules: unknown sub-command %q\n%s", sub, rulesHelp)
	}
	var sample string
	fs := newFlags("rules check", "rules check [DIR] [--sample FILE]", stdout)
	fs.StringVar(&sample, "sample", "", "JSON-lines `file` of sample requests ({\"method\",\"url\",\"content_type\",\"body\"}); key fields that no sample body of their route contains are errors")
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
	if sample != "" {
		if err := checkSamples(set, sample, stdout, stderr); err != nil {
			return err
		}
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
		for _, name := range a.ToolNames() {
			fmt.Fprintf(stdout, "  %s/%s\ttools/call %s\t%s\n", a.Name, name, a.MCP.Path, a.Tool(name).Effect)
		}
	}
	return nil
}

// sampleRequest is one line of a --sample file.
type sampleRequest struct {
	Method      string          `json:"method"`
	URL         string          `json:"url"`
	ContentType string          `json:"content_type"`
	Body        json.RawMessage `json:"body"`
}

// checkSamples derives every sample request and reports, at the route's
// position, key fields that none of its route's samples contains.
func checkSamples(set *rules.Set, path string, stdout, stderr io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read samples: %w", err)
	}
	defer f.Close()
	docs := map[*rules.Route][][]byte{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 8<<20)
	d := &rules.Deriver{}
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var s sampleRequest
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			return fmt.Errorf("%s:%d: %v", path, line, err)
		}
		u, err := url.Parse(s.URL)
		if err != nil || u.Host == "" {
			return fmt.Errorf("%s:%d: url must be absolute (got %q)", path, line, s.URL)
		}
		route, params := set.Match(u.Host, strings.ToUpper(s.Method), u.EscapedPath())
		if route == nil {
			fmt.Fprintf(stdout, "%s:%d: no route matches %s %s\n", path, line, s.Method, s.URL)
			continue
		}
		body := []byte(s.Body)
		var str string
		if json.Unmarshal(s.Body, &str) == nil {
			body = []byte(str) // a string body is sent as it is (forms)
		}
		it, err := d.Derive(route, rules.Input{ContentType: s.ContentType, Body: body, RawQuery: u.RawQuery, PathValues: params})
		if err != nil {
			return fmt.Errorf("%s:%d: %v", path, line, err)
		}
		docs[route] = append(docs[route], it.Doc)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read samples: %w", err)
	}
	bad := 0
	for _, a := range set.APIs {
		for _, r := range a.Routes {
			if _, ok := docs[r]; !ok {
				continue
			}
			for _, field := range r.MissingFields(docs[r]) {
				bad++
				fmt.Fprintf(stderr, "%s: key.fields: %q is in none of the %d sample bodies of route %s: a typo, or a path into another shape of body?\n",
					r.Pos, field, len(docs[r]), r.Name)
			}
		}
	}
	if bad > 0 {
		return fmt.Errorf("rules check: %d key fields match no sample", bad)
	}
	return nil
}
