package rules

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"testing"
)

func TestTemplateExpand(t *testing.T) {
	v := Values{
		Key:         "k1",
		OperationID: "in_1/2",
		Path:        map[string]string{"order": "o 1"},
		Body:        []byte(`{"customer":"c&d","n":1.5,"ok":true,"lines":[{"id":"l1"}],"empty":"","nil":null}`),
		Response:    []byte(`{"id":"in_9","data":[{"id":"x"}]}`),
	}
	tests := []struct {
		name    string
		tmpl    string
		escape  bool
		want    string
		wantErr error
	}{
		{name: "literal", tmpl: "https://x.example/a", escape: true, want: "https://x.example/a"},
		{name: "key in query", tmpl: "https://x.example/a?k={{key}}", escape: true, want: "https://x.example/a?k=k1"},
		{name: "path escape before ?", tmpl: "https://x.example/i/{{operation_id}}?o={{operation_id}}", escape: true, want: "https://x.example/i/in_1%2F2?o=in_1%2F2"},
		{name: "path value", tmpl: "https://x.example/o/{{path.order}}?q={{path.order}}", escape: true, want: "https://x.example/o/o%201?q=o+1"},
		{name: "body values", tmpl: "https://x.example/?c={{body.customer}}&n={{body.n}}&ok={{body.ok}}&l={{body.lines.0.id}}", escape: true, want: "https://x.example/?c=c%26d&n=1.5&ok=true&l=l1"},
		{name: "response value", tmpl: "https://x.example/{{response.data.0.id}}", escape: true, want: "https://x.example/x"},
		{name: "spaces in braces", tmpl: "{{ key }}-{{	operation_id }}", want: "k1-in_1/2"},
		{name: "no escaping", tmpl: "{{body.customer}} {{path.order}}", want: "c&d o 1"},
		{name: "object value as json", tmpl: "{{body.lines.0}}", want: `{"id":"l1"}`},
		{name: "missing body path", tmpl: "https://x.example/?c={{body.nope}}", wantErr: ErrMissingValue},
		{name: "empty body value", tmpl: "{{body.empty}}", wantErr: ErrMissingValue},
		{name: "null body value", tmpl: "{{body.nil}}", wantErr: ErrMissingValue},
		{name: "missing path value", tmpl: "{{path.other}}", wantErr: ErrMissingValue},
		{name: "missing operation id", tmpl: "{{operation_id}}", wantErr: ErrMissingValue},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tm, err := ParseTemplate(tc.tmpl)
			if err != nil {
				t.Fatalf("ParseTemplate(%q) error = %v", tc.tmpl, err)
			}
			if tm.String() != tc.tmpl {
				t.Errorf("String() = %q, want %q", tm.String(), tc.tmpl)
			}
			vv := v
			if tc.name == "missing operation id" {
				vv.OperationID = ""
			}
			got, err := tm.Expand(vv, tc.escape)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Errorf("Expand() = %q, %v; want error %v", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("Expand() = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	tm, _ := ParseTemplate("https://x.example/{{body.customer}}/{{path.gone}}")
	_, err := tm.Expand(v, true)
	if want := "expand {{path.gone}}: missing template value"; err == nil || err.Error() != want {
		t.Errorf("Expand() error = %v, want %q", err, want)
	}
}

func TestParseTemplateErrors(t *testing.T) {
	tests := []struct {
		tmpl string
		want string
	}{
		{tmpl: "a{{key", want: "template offset 1: unterminated {{"},
		{tmpl: "{{key}}{{x", want: "template offset 7: unterminated {{"},
		{tmpl: "{{a {{key}}", want: "template offset 0: unterminated {{"},
		{tmpl: "x{{}}", want: "template offset 1: unknown reference {{}} (want key, operation_id, path.NAME, body.PATH or response.PATH)"},
		{tmpl: "{{Key}}", want: "template offset 0: unknown reference {{Key}} (want key, operation_id, path.NAME, body.PATH or response.PATH)"},
		{tmpl: "{{path.}}", want: "template offset 0: {{path.}} needs a wildcard name"},
		{tmpl: "{{body.}}", want: "template offset 0: {{body.}}: invalid gjson path: empty path"},
		{tmpl: "{{response.a..b}}", want: "template offset 0: {{response.a..b}}: invalid gjson path: empty path component"},
	}
	for _, tc := range tests {
		t.Run(tc.tmpl, func(t *testing.T) {
			_, err := ParseTemplate(tc.tmpl)
			var te *TemplateError
			if !errors.As(err, &te) || err.Error() != tc.want {
				t.Errorf("ParseTemplate(%q) error = %v, want %q", tc.tmpl, err, tc.want)
			}
		})
	}
}

func TestExpectationMatch(t *testing.T) {
	tests := []struct {
		name   string
		exp    *Expectation
		status int
		body   string
		want   bool
	}{
		{name: "nil matches nothing", exp: nil, status: 200, body: `{}`, want: false},
		{name: "status only", exp: &Expectation{Status: []int{200}}, status: 200, body: `not json`, want: true},
		{name: "status list", exp: &Expectation{Status: []int{200, 204}}, status: 204, want: true},
		{name: "status mismatch", exp: &Expectation{Status: []int{200}}, status: 404, body: `{}`, want: false},
		{name: "any status", exp: &Expectation{Contains: "ok"}, status: 500, body: `ok`, want: true},
		{name: "body count", exp: &Expectation{Body: []BodyMatch{{"data.#", "1"}}}, status: 200, body: `{"data":[{"id":"x"}]}`, want: true},
		{name: "body count zero", exp: &Expectation{Body: []BodyMatch{{"data.#", "0"}}}, status: 200, body: `{"data":[]}`, want: true},
		{name: "body count mismatch", exp: &Expectation{Body: []BodyMatch{{"data.#", "0"}}}, status: 200, body: `{"data":[1]}`, want: false},
		{name: "body string", exp: &Expectation{Body: []BodyMatch{{"status", "open"}}}, status: 200, body: `{"status":"open"}`, want: true},
		{name: "body number and bool", exp: &Expectation{Body: []BodyMatch{{"n", "1.5"}, {"ok", "true"}}}, status: 200, body: `{"n":1.5,"ok":true}`, want: true},
		{name: "body all must hold", exp: &Expectation{Body: []BodyMatch{{"a", "1"}, {"b", "2"}}}, status: 200, body: `{"a":1,"b":3}`, want: false},
		{name: "missing path never matches", exp: &Expectation{Body: []BodyMatch{{"status", ""}}}, status: 200, body: `{}`, want: false},
		{name: "malformed json never matches", exp: &Expectation{Body: []BodyMatch{{"status", "open"}}}, status: 200, body: `{"status":"open"`, want: false},
		{name: "contains", exp: &Expectation{Status: []int{200}, Contains: `"state":"done"`}, status: 200, body: `{"state":"done"}`, want: true},
		{name: "contains mismatch", exp: &Expectation{Contains: "done"}, status: 200, body: `pending`, want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.exp.Match(tc.status, []byte(tc.body)); got != tc.want {
				t.Errorf("Match(%d, %s) = %v, want %v", tc.status, tc.body, got, tc.want)
			}
		})
	}
}

func TestExtractor(t *testing.T) {
	h := http.Header{"X-Refund-Id": {"rf_1"}}
	body := []byte(`{"id":"in_1","data":[{"id":"d1"}],"n":7}`)
	tests := []struct {
		spec string
		want string
	}{
		{spec: "body:id", want: "in_1"},
		{spec: "body:data.0.id", want: "d1"},
		{spec: "body:n", want: "7"},
		{spec: "body:missing", want: ""},
		{spec: "header:x-refund-id", want: "rf_1"},
		{spec: "header:X-Missing", want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.spec, func(t *testing.T) {
			x, err := ParseExtractor(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			if got := x.Extract(h, body); got != tc.want {
				t.Errorf("Extract() = %q, want %q", got, tc.want)
			}
		})
	}
	x, _ := ParseExtractor("header:x-refund-id")
	if got := x.String(); got != "header:X-Refund-Id" {
		t.Errorf("String() = %q", got)
	}
	if got := (Extractor{}).Extract(h, body); got != "" {
		t.Errorf("zero Extractor extracted %q", got)
	}
	for _, bad := range []string{"id", "body:", "header:bad name", "cookie:x"} {
		if _, err := ParseExtractor(bad); err == nil {
			t.Errorf("ParseExtractor(%q) succeeded", bad)
		}
	}
}

func TestCompositeOperationID(t *testing.T) {
	x, err := ParseExtractor("{{response.channel}}:{{response.ts}}")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, body, want string }{
		{name: "both parts", body: `{"ok":true,"channel":"C1","ts":"1700000000.000100"}`, want: "C1:1700000000.000100"},
		{name: "a part missing", body: `{"ok":true,"channel":"C1"}`, want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := x.Extract(nil, []byte(tc.body)); got != tc.want {
				t.Errorf("Extract() = %q, want %q", got, tc.want)
			}
		})
	}
	hx, err := ParseExtractor("{{header.location}}#{{response.id}}")
	if err != nil {
		t.Fatal(err)
	}
	if got := hx.Extract(http.Header{"Location": {"/m/1"}}, []byte(`{"id":"9"}`)); got != "/m/1#9" {
		t.Errorf("header template = %q", got)
	}
}

// FuzzTemplate checks template parsing and expansion: no panic on any
// template, and a value expanded into a query string comes back exactly,
// whatever characters it holds. Seeds: testdata/fuzz/FuzzTemplate.
func FuzzTemplate(f *testing.F) {
	fixed, err := ParseTemplate("https://h.example/v1/x?k={{key}}&o={{operation_id}}")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, tpl string, key, op string, body []byte) {
		vals := Values{Key: key, OperationID: op, Body: body, Response: body, Path: map[string]string{"id": op}}
		if tp, err := ParseTemplate(tpl); err == nil {
			tp.Expand(vals, true)
			tp.Expand(vals, false)
		}
		out, err := fixed.Expand(vals, true)
		if err != nil {
			if !errors.Is(err, ErrMissingValue) {
				t.Fatalf("expand: %v", err)
			}
			return
		}
		u, err := url.Parse(out)
		if err != nil {
			t.Fatalf("escaped expansion %q does not parse: %v", out, err)
		}
		if q := u.Query(); q.Get("k") != key || q.Get("o") != op {
			t.Fatalf("values did not survive escaping: %q -> k=%q o=%q, want %q %q", out, q.Get("k"), q.Get("o"), key, op)
		}
	})
}

// FuzzExpectation checks that matching an answer never panics, and that a
// body expectation never matches a body that is not JSON.
func FuzzExpectation(f *testing.F) {
	f.Fuzz(func(t *testing.T, path, value string, status int, body []byte) {
		e := &Expectation{Status: []int{200}, Body: []BodyMatch{{Path: path, Value: value}}}
		ok := e.Match(status, body)
		if ok && (status != 200 || !json.Valid(body)) {
			t.Fatalf("matched status %d body %q", status, body)
		}
		(&Expectation{Contains: value}).Match(status, body)
		(Extractor{Source: SourceBody, Path: path}).Extract(nil, body)
	})
}

// Regression: a {NAME...} wildcard's value holds several path segments,
// and a lookup or verification URL built from it escaped its '/' as %2F
// (GET .../contents/docs%2Fa.md), addressing another resource, or none.
func TestExpandMultiSegmentWildcard(t *testing.T) {
	api := mustParse(t, `
api: gh
hosts: [api.github.com]
routes:
  - name: delete_file
    match: DELETE /repos/{owner}/{repo}/contents/{path...}
    effect: reversible
    verify:
      request: GET https://api.github.com/repos/{{path.owner}}/{{path.repo}}/contents/{{path.path}}?p={{path.path}}
      expect: {status: 404}
      within: 1m
`)
	tpl := api.Routes[0].Verify.Request.URL
	got, err := tpl.Expand(Values{Path: map[string]string{"owner": "ac/me", "repo": "api", "path": "docs/a b/ü.md"}}, true)
	if err != nil {
		t.Fatal(err)
	}
	const want = "https://api.github.com/repos/ac%2Fme/api/contents/docs/a%20b/%C3%BC.md?p=docs%2Fa+b%2F%C3%BC.md"
	if got != want {
		t.Errorf("Expand =\n%s\nwant\n%s", got, want)
	}
}
