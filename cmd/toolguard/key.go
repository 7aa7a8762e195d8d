package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/toolguard/toolguard/rules"
)

const keyHelp = `Usage: toolguard key explain --method M --url URL [--header 'K: V']... [--body DATA|@FILE] [--rules DIR|FILE] [--journal FILE]

Prints the route a request matches, the canonical form of its intent and
its key, exactly as the proxy derives them. With the journal's secret
($TOOLGUARD_JOURNAL_SECRET_FILE, else beside --journal) the key equals the
proxy's; without it the credential part differs.
`

// headerList is a repeatable --header flag.
type headerList []string

func (h *headerList) String() string     { return strings.Join(*h, ", ") }
func (h *headerList) Set(v string) error { *h = append(*h, v); return nil }

func runKey(args []string, stdout, stderr io.Writer) error {
	sub, rest, err := subcommand("key", args, stdout, keyHelp)
	if err != nil {
		return err
	}
	if sub != "explain" {
		return usagef("key: unknown sub-command %q\n%s", sub, keyHelp)
	}
	var method, rawURL, body, dir, journalPath string
	var headers headerList
	fs := newFlags("key explain", "key explain --method M --url URL [--header 'K: V'] [--body DATA|@FILE]", stdout)
	fs.StringVar(&method, "method", "POST", "request `method`")
	fs.StringVar(&rawURL, "url", "", "request `URL`, e.g. https://api.example.com/v1/invoices")
	fs.Var(&headers, "header", "request header `'Name: value'` (repeatable)")
	fs.StringVar(&body, "body", "", "request body, or @file to read it from a file")
	fs.StringVar(&dir, "rules", envOr("TOOLGUARD_RULES_DIR", "./rules"), "rules `dir`ectory, or one rule file")
	fs.StringVar(&journalPath, "journal", envOr("TOOLGUARD_JOURNAL_PATH", "./toolguard.db"), "journal `file` whose secret keys the credential")
	if err := parseNoArgs(fs, rest); err != nil {
		return err
	}
	if rawURL == "" {
		return usagef("key explain: --url is required")
	}
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return usagef("key explain: --url must be absolute (got %q)", rawURL)
	}
	h := http.Header{}
	for _, kv := range headers {
		k, v, ok := strings.Cut(kv, ":")
		if !ok {
			return usagef("key explain: --header must be 'Name: value' (got %q)", kv)
		}
		h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	data, err := readBodyArg(body)
	if err != nil {
		return err
	}
	set, err := loadRules(dir, io.Discard)
	if err != nil {
		var es *rules.Errors
		if !errors.As(err, &es) {
			return fmt.Errorf("key explain: %w", err)
		}
		fmt.Fprintln(stderr, err)
		return fmt.Errorf("key explain: rules in %s have errors", dir)
	}
	return explain(stdout, set, journalPath, strings.ToUpper(method), u, h, data)
}

func readBodyArg(body string) ([]byte, error) {
	if name, ok := strings.CutPrefix(body, "@"); ok {
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("read body: %w", err)
		}
		return b, nil
	}
	return []byte(body), nil
}

func explain(w io.Writer, set *rules.Set, journalPath, method string, u *url.URL, h http.Header, body []byte) error {
	route, params := set.Match(u.Host, method, u.EscapedPath())
	route, pass, err := rules.SelectGraphQL(route, body)
	switch {
	case err != nil:
		return err
	case pass:
		fmt.Fprintf(w, "no route selects this GraphQL query: the call passes through unguarded\n")
		return nil
	}
	if route != nil && route.Effect == rules.EffectNone {
		fmt.Fprintf(w, "route %s/%s has effect none: the call passes through unguarded (reason: %s)\n", route.API.Name, route.Name, route.Reason)
		return nil
	}
	if route == nil {
		explainNoRoute(w, set, method, u)
		return nil
	}
	secret, note := explainSecret(journalPath)
	in := rules.Input{ContentType: h.Get("Content-Type"), Body: body, RawQuery: u.RawQuery, PathValues: params, EscapedPath: u.EscapedPath(), Workflow: h.Get(rules.HeaderWorkflow), Host: u.Host}
	in.Credential = route.API.CallerCredential(h)
	intent, err := (&rules.Deriver{Secret: secret}).Derive(route, in)
	if err != nil {
		return err
	}
	var pretty bytes.Buffer
	json.Indent(&pretty, intent.Material, "  ", "  ")
	fmt.Fprintf(w, "route:     %s/%s (%s %s, %s)\n", route.API.Name, route.Name, route.Method, route.Pattern, route.Effect)
	fmt.Fprintf(w, "defined:   %s\n", route.Pos)
	if route.Unlisted() {
		fmt.Fprintf(w, "why:       no route of %s matched: unlisted: guard (the whole request is the key)\n", route.API.Name)
	}
	fmt.Fprintf(w, "canonical: %s\n", pretty.String())
	fmt.Fprintf(w, "body hash: %s\n", intent.BodyHash)
	fmt.Fprintf(w, "key:       %s\n", intent.Key)
	if note != "" {
		fmt.Fprintf(w, "note:      %s\n", note)
	}
	return nil
}

// explainNoRoute says why a call that no route matches is not guarded.
func explainNoRoute(w io.Writer, set *rules.Set, method string, u *url.URL) {
	api := set.API(u.Host)
	switch {
	case api == nil || api.MCP != nil:
		fmt.Fprintf(w, "no route matches %s %s%s: the call passes through unguarded (unless unmatched is guard or reject)\n", method, u.Host, u.Path)
	case !isWrite(method):
		fmt.Fprintf(w, "no route of %s matches %s %s%s: a read passes through unguarded (unless unmatched is reject)\n", api.Name, method, u.Host, u.Path)
	default:
		fmt.Fprintf(w, "no route of %s matches %s %s%s, and its rule file says unlisted: pass: the call passes through unguarded (unless unmatched is reject)\n", api.Name, method, u.Host, u.Path)
	}
}

func isWrite(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// explainSecret reads the install's HMAC secret without creating one:
// TOOLGUARD_JOURNAL_SECRET_FILE's when set, else the one beside the
// journal file.
func explainSecret(journalPath string) ([]byte, string) {
	path := envOr("TOOLGUARD_JOURNAL_SECRET_FILE", journalPath+".secret")
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, "no secret at " + path + ": the credential part (and so the key) differs from the proxy's"
	}
	return b, ""
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
