package rules_test

import (
	"bytes"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/rules"
	"github.com/toolguard/toolguard/rules/samples"
)

// packsDir holds one directory per provider: rules/packs/<provider>/.
const packsDir = "packs"

// packsSecret is the fixed journal secret the golden keys are derived
// with; a real deployment's keys differ (its secret is its own).
var packsSecret = []byte("toolguard-packs-golden-secret")

// packFiles are the files every pack must hold besides <provider>.yaml.
var packFiles = []string{"samples.jsonl", "README.md", "keys.golden"}

// TestPacks checks every rule pack under rules/packs: its rule file loads,
// its samples key without problems and cover every route with a sample, a
// same_key_as pair and a key_differs_from pair, and each sample's canonical
// form and key equal keys.golden (rewrite it with -update after a
// deliberate change: a changed key means agents' retries across the
// upgrade are no longer recognised).
func TestPacks(t *testing.T) {
	entries, err := os.ReadDir(packsDir)
	if err != nil {
		t.Fatalf("read %s: %v", packsDir, err)
	}
	index, err := os.ReadFile(filepath.Join(packsDir, "README.md"))
	if err != nil {
		t.Fatalf("the packs need an index: %v", err)
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		n++
		if !bytes.Contains(index, []byte("["+e.Name()+"]("+e.Name()+"/)")) {
			t.Errorf("%s/README.md does not list the pack %s", packsDir, e.Name())
		}
		t.Run(e.Name(), func(t *testing.T) { checkPack(t, filepath.Join(packsDir, e.Name())) })
	}
	if n == 0 {
		t.Fatalf("no packs under %s", packsDir)
	}
}

func checkPack(t *testing.T, dir string) {
	name := filepath.Base(dir)
	ruleFile := filepath.Join(dir, name+".yaml")
	for _, f := range append([]string{name + ".yaml"}, packFiles...) {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil && !(f == "keys.golden" && updating()) {
			t.Errorf("every pack holds %s: %v", f, err)
		}
	}
	data, err := os.ReadFile(ruleFile)
	if err != nil {
		t.Fatal(err)
	}
	api, err := rules.Parse(ruleFile, data)
	if err != nil {
		t.Fatal(err)
	}
	if api.Name != name {
		t.Errorf("%s: api is %q; a pack's api is named like its directory", ruleFile, api.Name)
	}
	checkReadme(t, filepath.Join(dir, "README.md"), api)
	set, err := rules.NewSet(api)
	if err != nil {
		t.Fatal(err)
	}
	ss := readPackSamples(t, filepath.Join(dir, "samples.jsonl"))
	d := &rules.Deriver{Secret: packsSecret}
	rep := samples.Check(set, ss, d)
	for _, p := range rep.Problems {
		t.Error(p)
	}
	for _, g := range rep.Gaps(set) {
		t.Error(g)
	}
	compareGolden(t, filepath.Join(dir, "keys.golden"), packGolden(t, set, ss, d))
}

// checkReadme checks that the pack's README table names every route's
// path pattern.
func checkReadme(t *testing.T, file string, api *rules.API) {
	t.Helper()
	readme, err := os.ReadFile(file)
	if err != nil {
		return // reported already
	}
	for _, r := range api.Routes {
		if !bytes.Contains(readme, []byte(r.Pattern)) {
			t.Errorf("%s: route %s (%s %s) is not in the README's table", file, r.Name, r.Method, r.Pattern)
		}
	}
}

func readPackSamples(t *testing.T, file string) []samples.Sample {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ss, err := samples.Read(file, f)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) == 0 {
		t.Fatalf("%s: no samples", file)
	}
	return ss
}

// packGolden is the golden text of a pack: per sample, its name and route,
// the canonical form its key hashes, and the key.
func packGolden(t *testing.T, set *rules.Set, ss []samples.Sample, d *rules.Deriver) []byte {
	t.Helper()
	var b bytes.Buffer
	for i := range ss {
		s := &ss[i]
		route, it, err := samples.Derive(set, s, d)
		fmt.Fprintf(&b, "%s\n", s.Name)
		switch {
		case route == nil:
			fmt.Fprintf(&b, "  no route: %v\n", err)
		case err != nil:
			fmt.Fprintf(&b, "  route %s\n  error %v\n", route.Name, err)
		case !route.Effect.Guarded():
			fmt.Fprintf(&b, "  route %s\n  unguarded (effect %s)\n", route.Name, route.Effect)
		default:
			fmt.Fprintf(&b, "  route %s\n  canonical %s\n  key %s\n", route.Name, it.Material, it.Key)
			if route.Lookup != nil {
				fmt.Fprintf(&b, "  lookup %s\n", lookupURL(t, set, s, route, it))
			}
		}
	}
	return b.Bytes()
}

// lookupURL is the route's lookup request for the sample, as it would be
// sent, or "none" naming the request values a sample without its business
// reference lacks (recovery then has no lookup). Every other reference it
// makes must have a value in every sample (a lookup that cannot be
// expanded is unknown, and the step is held).
func lookupURL(t *testing.T, set *rules.Set, s *samples.Sample, route *rules.Route, it *rules.Intent) string {
	t.Helper()
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, params := set.Match(u.Host, s.Method, u.EscapedPath())
	vals := rules.Values{Key: it.Key, Path: params, Body: it.Doc}
	if absent := route.Lookup.AbsentRefs(vals); len(absent) > 0 {
		return "none (the request has no " + strings.Join(absent, ", ") + ")"
	}
	l := route.Lookup.Request
	got, err := l.URL.Expand(vals, true)
	if err != nil {
		t.Errorf("%s: lookup of route %s: %v", s.Pos(), route.Name, err)
	}
	return l.Method + " " + got
}

// updating reports whether the test runs with -update (the flag the rules
// package's own tests declare, in the same test binary).
func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

func compareGolden(t *testing.T, file string, got []byte) {
	t.Helper()
	if updating() {
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (write it with go test ./rules -run TestPacks -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the derived keys (rewrite it with -update only for a deliberate change):\n%s", file, lineDiff(want, got))
	}
}

// lineDiff names the first line where want and got differ.
func lineDiff(want, got []byte) string {
	w, g := bytes.Split(want, []byte("\n")), bytes.Split(got, []byte("\n"))
	for i := 0; i < len(w) || i < len(g); i++ {
		var a, b []byte
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if !bytes.Equal(a, b) {
			return fmt.Sprintf("line %d:\n  want %s\n  got  %s", i+1, a, b)
		}
	}
	return ""
}
