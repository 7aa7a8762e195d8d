package rules

import (
	"bytes"
	"mime/multipart"
	"net/textproto"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// Each pair gave one key although the requests are different intents
// (a caller could be answered with a stranger's response), or is one
// intent spelt twice. testdata/keys holds the same cases as samples with
// their golden keys; this table pins each mechanism on its own.
func TestDeriveCollisions(t *testing.T) {
	api := mustParse(t, `
api: collide
hosts: [api.collide.example]
credential: {header: Authorization}
routes:
  - name: whole
    match: POST /v1/things
    effect: irreversible
  - name: order
    match: POST /v1/orders
    effect: irreversible
    key: {fields: [items.0.sku, "lines.#", "rows.#.0", "meta.01"], optional: ["lines.#", "rows.#.0", "meta.01"]}
  - name: file
    match: PUT /v1/files/{path...}
    effect: irreversible
  - name: note
    match: POST /v1/customers/{customer}/notes
    effect: irreversible
`)
	set, err := NewSet(api)
	if err != nil {
		t.Fatal(err)
	}
	d := &Deriver{Secret: []byte("secret")}
	at := func(method, path string, in Input) Input {
		route, pv := set.Match("api.collide.example", method, path)
		if route == nil {
			t.Fatalf("no route for %s %s", method, path)
		}
		in.PathValues, in.EscapedPath = pv, path
		return in
	}
	file := func(path string) Input { return at("PUT", path, Input{}) }
	upload := func(filename string) Input {
		body, ct := multipartFile(t, `form-data; name="file"; filename=`+filename)
		return Input{ContentType: ct, Body: body}
	}
	tests := []struct {
		name     string
		route    string
		a, b     Input
		wantSame bool
	}{
		{name: "multipart filename keeps its directory", route: "whole", a: upload(`"invoices/a.pdf"`), b: upload(`"a.pdf"`)},
		{name: "multipart filename keeps ..", route: "whole", a: upload(`"../../a.pdf"`), b: upload(`"a.pdf"`)},
		{name: "multipart filename backslashes", route: "whole", a: upload(`"c:\\\\tmp\\\\a.pdf"`), b: upload(`"a.pdf"`)},
		{name: "multipart filename quoted or token", route: "whole", a: upload(`"a.pdf"`), b: upload(`a.pdf`), wantSame: true},
		{name: "multipart filename RFC 2231", route: "whole", a: upload(`"x"; filename*=UTF-8''caf%C3%A9.pdf`), b: upload(`"café.pdf"`), wantSame: true},

		{name: "index 0 of an array is not member 0", route: "order",
			a: jsonIn(`{"items":[{"sku":"s1"}]}`), b: jsonIn(`{"items":{"0":{"sku":"s1"}}}`)},
		{name: "index 1 is not member 01", route: "order",
			a: jsonIn(`{"items":[{"sku":"s1"}],"meta":[0,"x"]}`), b: jsonIn(`{"items":[{"sku":"s1"}],"meta":{"01":"x"}}`)},
		{name: "array length is not member #", route: "order",
			a: jsonIn(`{"items":[{"sku":"s1"}],"lines":[1,2]}`), b: jsonIn(`{"items":[{"sku":"s1"}],"lines":{"#":2}}`)},
		{name: "per-element index is not member 0", route: "order",
			a: jsonIn(`{"items":[{"sku":"s1"}],"rows":[[5]]}`), b: jsonIn(`{"items":[{"sku":"s1"}],"rows":[{"0":5}]}`)},
		{name: "unselected members still do not count", route: "order",
			a: jsonIn(`{"items":[{"sku":"s1","qty":1}],"rows":[[5],{"x":1}]}`), b: jsonIn(`{"items":[{"sku":"s1","qty":2}],"rows":[[5]]}`), wantSame: true},
		{name: "missing optional is null", route: "order",
			a: jsonIn(`{"items":[{"sku":"s1"}]}`), b: jsonIn(`{"items":[{"sku":"s1"}],"meta":{"01":null}}`), wantSame: true},

		{name: "{path...}: escaped slash is not a slash", route: "file", a: file("/v1/files/a%2Fb"), b: file("/v1/files/a/b")},
		{name: "{path...}: escaped percent is not an escape", route: "file", a: file("/v1/files/a%252Fb"), b: file("/v1/files/a%2Fb")},
		{name: "{path...}: lower-case hex is the same escape", route: "file", a: file("/v1/files/a%2fb"), b: file("/v1/files/a%2Fb"), wantSame: true},
		{name: "{path...}: an escaped letter is the letter", route: "file", a: file("/v1/files/%61/b"), b: file("/v1/files/a/b"), wantSame: true},
		{name: "{name}: unescaped as Match gives it", route: "note",
			a: at("POST", "/v1/customers/c%5F1/notes", jsonIn(`{}`)), b: at("POST", "/v1/customers/c_1/notes", jsonIn(`{}`)), wantSame: true},

		{name: "form is not JSON", route: "whole", a: jsonIn(`{"a":"1"}`),
			b: Input{ContentType: "application/x-www-form-urlencoded", Body: []byte("a=1"), Credential: "Bearer sk_1", Workflow: "wf-1"}},
		{name: "merge patch is not JSON", route: "whole", a: jsonIn(`{"a":"1"}`),
			b: Input{ContentType: "application/merge-patch+json", Body: []byte(`{"a":"1"}`), Credential: "Bearer sk_1", Workflow: "wf-1"}},
		{name: "media type case and parameters", route: "whole", a: jsonIn(`{"a":"1"}`),
			b: Input{ContentType: "Application/JSON ; charset=UTF-8", Body: []byte(`{"a":"1"}`), Credential: "Bearer sk_1", Workflow: "wf-1"}, wantSame: true},
		{name: "an empty body has no media type", route: "whole",
			a: Input{ContentType: "application/json"}, b: Input{}, wantSame: true},

		{name: "integers beyond 2^53", route: "whole", a: jsonIn(`{"n":9007199254740993}`), b: jsonIn(`{"n":9007199254740992}`)},
		{name: "decimals that round to one float64", route: "whole", a: jsonIn(`{"n":0.10000000000000001}`), b: jsonIn(`{"n":0.1}`)},
		{name: "one decimal value in two notations", route: "whole", a: jsonIn(`{"n":1.50}`), b: jsonIn(`{"n":15E-1}`), wantSame: true},
		{name: "NFC and NFD", route: "whole", a: jsonIn("{\"s\":\"Caf\u00e9\"}"), b: jsonIn("{\"s\":\"Cafe\u0301\"}")},
		{name: "a JSON escape is its character", route: "whole", a: jsonIn(`{"s":"Caf\u00e9"}`), b: jsonIn("{\"s\":\"Caf\u00e9\"}"), wantSame: true},
		{name: "string is not number", route: "whole", a: jsonIn(`{"v":"1"}`), b: jsonIn(`{"v":1}`)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := routeByName(t, api, tc.route)
			a, err := d.Derive(r, tc.a)
			if err != nil {
				t.Fatalf("Derive(a) error = %v", err)
			}
			b, err := d.Derive(r, tc.b)
			if err != nil {
				t.Fatalf("Derive(b) error = %v", err)
			}
			if same := a.Key == b.Key; same != tc.wantSame {
				t.Errorf("same key = %v, want %v\na: %s\nb: %s", same, tc.wantSame, a.Material, b.Material)
			}
		})
	}
}

// multipartFile is a multipart body of one file part with the given
// Content-Disposition.
func multipartFile(t *testing.T, disposition string) ([]byte, string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", disposition)
	h.Set("Content-Type", "application/pdf")
	pw, err := w.CreatePart(h)
	if err != nil {
		t.Fatal(err)
	}
	pw.Write([]byte("%PDF same bytes"))
	w.Close()
	return b.Bytes(), w.FormDataContentType()
}

func TestAppendContainers(t *testing.T) {
	tests := []struct {
		doc, path, want string
	}{
		{doc: `{"a":1}`, path: "a", want: `["object"]`},
		{doc: `{"items":[{"sku":1}]}`, path: "items.0.sku", want: `["object","array","object"]`},
		{doc: `{"items":{"0":{"sku":1}}}`, path: "items.0.sku", want: `["object","object","object"]`},
		{doc: `[{"a":1}]`, path: "0.a", want: `["array","object"]`},
		{doc: `{"a":[1,2]}`, path: "a.#", want: `["object","array"]`},
		{doc: `{"a":{"#":2}}`, path: "a.#", want: `["object","object"]`},
		{doc: `{"a":[{"b":1},{"c":2},{"b":3}]}`, path: "a.#.b", want: `["object","array",[["object"],["object"]]]`},
		{doc: `{"a":[[[1]],[{"0":[2]}]]}`, path: "a.#.0.0", want: `["object","array",[["array","array"],["array","object"]]]`},
		{doc: `{"a.b":{"c":1}}`, path: `a\.b.c`, want: `["object","object"]`},
		{doc: `{"m[k]":1}`, path: `m[k]`, want: `["object"]`},
		{doc: `{"a":[{"b":1}]}`, path: `a.#(b==1).b`, want: `["object"]`},
		{doc: `{"a":{"b":1}}`, path: `a|b`, want: `[]`},
		{doc: `{"a":[1]}`, path: `a.@reverse`, want: `["object"]`},
		{doc: `{"a":1}`, path: "a.b", want: `["object","number"]`},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			if got := string(appendContainers(nil, gjson.Parse(tc.doc), tc.path)); got != tc.want {
				t.Errorf("appendContainers(%s, %q) = %s, want %s", tc.doc, tc.path, got, tc.want)
			}
		})
	}
}

func TestKeySegments(t *testing.T) {
	tests := []struct{ in, want string }{
		{in: "a/b", want: "a/b"},
		{in: "a%2Fb", want: "a%2Fb"},
		{in: "a%2fb", want: "a%2Fb"},
		{in: "a%252Fb", want: "a%252Fb"},
		{in: "%61%20b/c", want: "a b/c"},
		{in: "%E2%82%AC/x", want: "€/x"},
		{in: "bad%zz/ok%41", want: "bad%zz/okA"},
		{in: "", want: ""},
	}
	for _, tc := range tests {
		if got := keySegments(tc.in); got != tc.want {
			t.Errorf("keySegments(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// The unmatched: guard route keys its path from the escaped path too.
func TestFallbackEscapedPath(t *testing.T) {
	d := &Deriver{Secret: []byte("s")}
	key := func(escaped, decoded string) string {
		in := jsonIn(`{"a":1}`)
		in.EscapedPath = escaped
		it, err := d.Derive(Fallback("POST", "api.example.com", decoded), in)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(it.Material), `"path":{"path":`) {
			t.Fatalf("material %s has no path", it.Material)
		}
		return it.Key
	}
	if key("/v1/a%2Fb", "/v1/a/b") == key("/v1/a/b", "/v1/a/b") {
		t.Error("a%2Fb and a/b share a key")
	}
	if key("/v1/a/b", "/v1/a/b") != key("/v1/%61/b", "/v1/a/b") {
		t.Error("an escaped letter changes the key")
	}
}
