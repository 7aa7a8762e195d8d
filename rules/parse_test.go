package rules

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the testdata/*.golden files")

// golden compares got with the golden file, or rewrites it under -update.
func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./rules -run %s -update to create it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s differs (go test -update rewrites it)\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

// TestParseGolden parses every testdata/rules file: good_* files must
// parse (their golden file is a dump of the result), every other file
// must fail with exactly the errors of its golden file.
func TestParseGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/rules/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no rule files: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".yaml")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			api, err := Parse(filepath.ToSlash(file), data)
			wantOK := strings.HasPrefix(name, "good")
			var got string
			switch {
			case err == nil && wantOK:
				got = dumpAPI(api)
			case err != nil && !wantOK:
				var es *Errors
				if !errors.As(err, &es) {
					t.Fatalf("error is %T, want *Errors: %v", err, err)
				}
				got = err.Error() + "\n"
			default:
				t.Fatalf("Parse() error = %v, want ok = %v", err, wantOK)
			}
			golden(t, strings.TrimSuffix(file, ".yaml")+".golden", got)
		})
	}
}

func TestLoadGolden(t *testing.T) {
	_, err := Load("testdata/load")
	var es *Errors
	if !errors.As(err, &es) {
		t.Fatalf("Load() error = %v, want *Errors", err)
	}
	golden(t, "testdata/load.golden", filepath.ToSlash(err.Error())+"\n")
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	good, _ := filepath.Glob("testdata/rules/good_*.yaml")
	for _, f := range good {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		ext := ".yaml"
		if strings.Contains(f, "minimal") {
			ext = ".yml"
		}
		name := strings.TrimSuffix(filepath.Base(f), ".yaml") + ext
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "README.md"), []byte("not rules"), 0o644)
	set, err := Load(dir)
	if err != nil {
		t.Fatalf("Load() error = %v", err)
	}
	var names []string
	for _, a := range set.APIs {
		names = append(names, a.Name)
	}
	if got, want := strings.Join(names, ","), "shop_v2,mail,payments,requestside,responses,payments_v2"; got != want {
		t.Errorf("APIs = %s, want %s", got, want)
	}
	if r, _ := set.Match("payments.example.com:443", "POST", "/v1/invoices"); r == nil || r.Name != "create_invoice" {
		t.Errorf("Match() = %v, want create_invoice", r)
	}
	if _, err := Load(filepath.Join(dir, "missing")); err == nil || errors.As(err, new(*Errors)) {
		t.Errorf("Load(missing dir) error = %v, want a plain error", err)
	}
}

// dumpAPI prints what Parse made of a file, for the golden files.
func dumpAPI(a *API) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("api %s at %s", a.Name, a.Pos)
	p("hosts %q", a.Hosts)
	p("credential %q", a.Credential)
	if a.Mode != nil {
		p("guard mode %s", *a.Mode)
	}
	if a.Errors != (ErrorFormat{}) {
		p("errors %s template=%q", a.Errors.Style, a.Errors.Template)
	}
	p("unlisted %s", a.Unlisted)
	if ni := a.NativeIdempotency; ni != nil {
		p("native_idempotency header=%q ttl=%s", ni.Header, ni.TTL)
	}
	if a.Volatile != nil {
		p("volatile %q", a.Volatile)
	}
	for _, r := range a.Routes {
		p("route %s at %s", r.Name, r.Pos)
		p("  match %s %s %v", r.Method, r.Pattern, wildcards(r.segs))
		p("  effect %s", r.Effect)
		scope := fmt.Sprint(r.Key.Scope)
		if r.Key.Scope == nil {
			scope = "default"
		}
		p("  key fields=%q ignore=%q scope=%s", r.Key.Fields, r.Key.Ignore, scope)
		if len(r.Key.Optional) > 0 {
			p("  key optional=%q", r.Key.Optional)
		}
		if r.Key.Reference != nil {
			p("  key reference=%q", r.Key.Reference)
		}
		if ni := r.NativeIdempotency; ni != nil {
			p("  native_idempotency header=%q body=%q", ni.Header, ni.Body)
		}
		if r.noNative {
			p("  native_idempotency none")
		}
		p("  operation_id %q", r.OperationID)
		if l := r.Lookup; l != nil {
			p("  lookup %s %s", l.Request.Method, l.Request.URL)
			p("    found %s", dumpExpectation(l.Found))
			p("    absent %s", dumpExpectation(l.Absent))
			p("    operation_id %q", l.OperationID)
		}
		if v := r.Verify; v != nil {
			p("  verify %s %s within %s mode %s", v.Request.Method, v.Request.URL, v.Within, v.Mode)
			p("    expect %s", dumpExpectation(&v.Expect))
		}
		p("  approval_required %v redact=%q", r.ApprovalRequired, r.Redact)
		dumpExtras(p, r)
		dumpResponseRules(p, r)
	}
	return b.String()
}

// dumpExtras prints the request-side features a route sets.
func dumpExtras(p func(string, ...any), r *Route) {
	if r.Reason != "" {
		p("  reason %q", r.Reason)
	}
	if r.Key.RawContent {
		p("  key content=sha256")
	}
	if g := r.GraphQL; g != nil {
		p("  graphql operation=%q field=%q type=%s endpoint_first=%v", g.Operation, g.Field, g.opType(), r.graphqlGroup != nil)
	}
	if in := r.Inject; in != nil {
		p("  inject header=%q body=%q form=%q append=%q template=%q", in.Header, in.Body, in.Form, in.Append, in.Template)
	}
	if c := r.Conditional; c != nil {
		p("  conditional %s: %s", c.Header, c.Value)
	}
	if w := r.ApprovalWhen; w != nil {
		p("  approval when %q at %s", w.Expr, w.Pos)
	}
	if b := r.Budget; b != nil {
		p("  budget %d per %s", b.Calls, b.Per)
	}
}

func dumpExpectation(e *Expectation) string {
	if e == nil {
		return "<none>"
	}
	return fmt.Sprintf("status=%v body=%q contains=%q", e.Status, e.Body, e.Contains)
}

// Regression (found by FuzzParse): a literal segment ending in "...}"
// such as "/...}" was taken for a {name...} wildcard and sliced out of
// range.
func TestMatchLiteralLikeWildcard(t *testing.T) {
	api, err := Parse("x.yaml", []byte("api: x\nhosts: [x.example]\nroutes:\n  - name: a\n    match: POST /...}\n    effect: irreversible\n"))
	if err != nil {
		t.Fatal(err)
	}
	set, err := NewSet(api)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := set.Match("x.example", "POST", "/...}"); r == nil {
		t.Fatal("the literal path /...} does not match itself")
	}
}
