package rules

import (
	"bytes"
	"encoding/json"
	"errors"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strings"
	"testing"
)

const requestSideRules = `
api: requestside
hosts: [api.example.com]
routes:
  - name: upload
    match: POST /v1/files
    effect: irreversible
    key: {fields: [purpose, file]}
  - name: create_issue
    match: POST /graphql
    graphql: {field: issueCreate}
    effect: irreversible
    key: {fields: [variables.input.title]}
  - name: archive
    match: POST /graphql
    graphql: {operation: Archive}
    effect: reversible
    key: {fields: [variables.id]}
  - name: export
    match: POST /graphql
    graphql: {field: exportData, type: query}
    effect: reversible
  - name: charge
    match: POST /v1/charges
    effect: irreversible
    inject: {form: "metadata[toolguard_key]"}
  - name: email
    match: POST /email
    effect: irreversible
    key: {fields: [To]}
    inject: {body: Metadata.toolguard_key}
  - name: issue
    match: POST /issues
    effect: irreversible
    key: {fields: [title, body]}
    inject: {append: body, template: "\n<!-- toolguard:{{key}} -->"}
  - name: put
    match: PUT /{bucket}/{object...}
    effect: reversible
    key: {content: sha256}
    inject: {header: X-Amz-Meta-Toolguard-Key}
    conditional: {header: If-None-Match, value: "*"}
`

// part is one part of a test multipart body.
type part struct {
	name, filename, contentType, content string
}

func multipartBody(t testing.TB, parts ...part) Input {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		disp := `form-data; name="` + p.name + `"`
		if p.filename != "" {
			disp += `; filename="` + p.filename + `"`
		}
		h.Set("Content-Disposition", disp)
		if p.contentType != "" {
			h.Set("Content-Type", p.contentType)
		}
		pw, err := w.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		pw.Write([]byte(p.content))
	}
	w.Close()
	return Input{ContentType: w.FormDataContentType(), Body: b.Bytes()}
}

func routeNamed(t testing.TB, api *API, name string) *Route {
	t.Helper()
	for _, r := range api.Routes {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no route %q", name)
	return nil
}

func TestMultipartKey(t *testing.T) {
	r := routeNamed(t, mustParse(t, requestSideRules), "upload")
	d := &Deriver{Secret: []byte("s")}
	pdf := part{name: "file", filename: "a.pdf", contentType: "application/pdf", content: "%PDF-1 one"}
	purpose := part{name: "purpose", content: "dispute_evidence"}
	base := multipartBody(t, purpose, pdf)
	key := func(in Input) string {
		t.Helper()
		it, err := d.Derive(r, in)
		if err != nil {
			t.Fatalf("Derive: %v", err)
		}
		return it.Key
	}
	want := key(base)
	tests := []struct {
		name string
		in   Input
		same bool
	}{
		{name: "parts in another order, another boundary", in: multipartBody(t, pdf, purpose), same: true},
		{name: "an extra unkeyed part", in: multipartBody(t, purpose, pdf, part{name: "expand", content: "x"}), same: true},
		{name: "other content", in: multipartBody(t, purpose, part{name: "file", filename: "a.pdf", contentType: "application/pdf", content: "%PDF-1 two"})},
		{name: "other filename", in: multipartBody(t, purpose, part{name: "file", filename: "b.pdf", contentType: "application/pdf", content: pdf.content})},
		{name: "other content type", in: multipartBody(t, purpose, part{name: "file", filename: "a.pdf", contentType: "image/png", content: pdf.content})},
		{name: "other field", in: multipartBody(t, part{name: "purpose", content: "identity"}, pdf)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := key(tc.in) == want; got != tc.same {
				t.Errorf("same key = %v, want %v", got, tc.same)
			}
		})
	}
	t.Run("canonical form", func(t *testing.T) {
		doc, err := CanonicalBody(nil, base.ContentType, base.Body)
		if err != nil {
			t.Fatal(err)
		}
		const want = `{"file":{"content_sha256":"` +
			"fc228c4d13f5b7936fcea89dab201a7fad67b3f059f412e0134763f238315fe6" +
			`","content_type":"application/pdf","filename":"a.pdf","size":10},"purpose":"dispute_evidence"}`
		if string(doc) != want {
			t.Errorf("canonical = %s\nwant        %s", doc, want)
		}
	})
	t.Run("missing file part", func(t *testing.T) {
		_, err := d.Derive(r, multipartBody(t, purpose))
		var mf *MissingFieldsError
		if !errors.As(err, &mf) || len(mf.Fields) != 1 || mf.Fields[0] != "file" {
			t.Errorf("Derive() error = %v, want missing field file", err)
		}
	})
	t.Run("broken body", func(t *testing.T) {
		in := base
		in.Body = in.Body[:len(in.Body)/2]
		if _, err := d.Derive(r, in); !errors.Is(err, ErrInvalidBody) {
			t.Errorf("Derive() error = %v, want ErrInvalidBody", err)
		}
	})
	t.Run("no boundary", func(t *testing.T) {
		in := base
		in.ContentType = "multipart/form-data"
		if _, err := d.Derive(r, in); !errors.Is(err, ErrInvalidBody) {
			t.Errorf("Derive() error = %v, want ErrInvalidBody", err)
		}
	})
}

func TestParseGraphQLRequest(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		want    GraphQLOperation
		wantErr string
	}{
		{name: "named mutation", body: `{"query":"mutation CreateIssue($i: IssueCreateInput!) { issueCreate(input: $i) { success } }"}`,
			want: GraphQLOperation{Type: "mutation", Name: "CreateIssue", Field: "issueCreate"}},
		{name: "alias, directives, comments and strings", body: `{"query":"# a { comment\nmutation M @dir(x: \"}\") { made: issueCreate(input: {title: \"a } b\"}) { id } other { x } }"}`,
			want: GraphQLOperation{Type: "mutation", Name: "M", Field: "issueCreate"}},
		{name: "shorthand query", body: `{"query":"{ viewer { id } }"}`, want: GraphQLOperation{Type: "query", Field: "viewer"}},
		{name: "operationName picks one", body: `{"query":"query A { a } mutation B { b } fragment F on T { x }","operationName":"B"}`,
			want: GraphQLOperation{Type: "mutation", Name: "B", Field: "b"}},
		{name: "block string", body: `{"query":"mutation { c(body: \"\"\"}{\"\"\") { id } }"}`, want: GraphQLOperation{Type: "mutation", Field: "c"}},
		{name: "several operations, no name", body: `{"query":"query A { a } mutation B { b }"}`,
			wantErr: "invalid body: GraphQL query has 2 operations and no operationName says which to run"},
		{name: "unknown operationName", body: `{"query":"query A { a }","operationName":"Z"}`,
			wantErr: `invalid body: GraphQL query has 0 operations named "Z" (want exactly one)`},
		{name: "batch", body: `[{"query":"{ a }"}]`, wantErr: "invalid body: GraphQL batches are not supported (send one operation per request)"},
		{name: "unbalanced", body: `{"query":"mutation { a(x: 1 }"}`, wantErr: `invalid body: GraphQL query: unbalanced "}" at offset 18`},
		{name: "no query", body: `{"variables":{}}`, wantErr: "invalid body: GraphQL request without a query (persisted queries are not supported)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseGraphQLRequest([]byte(tc.body))
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr || !errors.Is(err, ErrInvalidBody) {
					t.Fatalf("error = %v, want %q wrapping ErrInvalidBody", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("ParseGraphQLRequest() = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestSelectGraphQL(t *testing.T) {
	api := mustParse(t, requestSideRules)
	set, err := NewSet(api)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := set.Match("api.example.com", "POST", "/graphql")
	tests := []struct {
		name      string
		body      string
		wantRoute string
		wantPass  bool
	}{
		{name: "by root field", body: `{"query":"mutation X { issueCreate(input: {}) { id } }"}`, wantRoute: "create_issue"},
		{name: "by operation name", body: `{"query":"mutation Archive($id: ID!) { issueArchive(id: $id) { success } }","variables":{"id":"1"}}`, wantRoute: "archive"},
		{name: "a query passes", body: `{"query":"query { issues { nodes { id } } }"}`, wantPass: true},
		{name: "a query with a mutation's root field passes", body: `{"query":"query Archive { issueCreate { id } }"}`, wantPass: true},
		{name: "a query a route selects with type: query", body: `{"query":"{ exportData(all: true) { url } }"}`, wantRoute: "export"},
		{name: "an unselected mutation is unmatched", body: `{"query":"mutation { teamCreate { id } }"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, pass, err := SelectGraphQL(first, []byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			name := ""
			if r != nil {
				name = r.Name
			}
			if name != tc.wantRoute || pass != tc.wantPass {
				t.Errorf("SelectGraphQL() = %q, pass %v; want %q, pass %v", name, pass, tc.wantRoute, tc.wantPass)
			}
		})
	}
	t.Run("two operations and no operationName", func(t *testing.T) {
		r, pass, err := SelectGraphQL(first, []byte(`{"query":"query A { a } mutation B { b }"}`))
		if !errors.Is(err, ErrInvalidBody) || r != nil || pass {
			t.Errorf("SelectGraphQL() = %v, pass %v, error %v; want an error wrapping ErrInvalidBody", r, pass, err)
		}
	})
}

const testKey = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestApplyInjection(t *testing.T) {
	api := mustParse(t, requestSideRules)
	tests := []struct {
		name, route, ct, body string
		wantBody              string
		wantHeader            map[string]string
	}{
		{name: "form field", route: "charge", ct: formType, body: "amount=100&currency=eur",
			wantBody: "amount=100&currency=eur&metadata%5Btoolguard_key%5D=" + testKey},
		{name: "form field replaced", route: "charge", ct: formType, body: "metadata%5Btoolguard_key%5D=old&amount=1",
			wantBody: "metadata%5Btoolguard_key%5D=" + testKey + "&amount=1"},
		{name: "nested JSON object created", route: "email", ct: "application/json", body: `{"To":"a@b"}`,
			wantBody: `{"Metadata":{"toolguard_key":"` + testKey + `"},"To":"a@b"}`},
		{name: "nested JSON object kept", route: "email", ct: "application/json", body: `{"To":"a@b","Metadata":{"order":"7"}}`,
			wantBody: `{"To":"a@b","Metadata":{"toolguard_key":"` + testKey + `","order":"7"}}`},
		{name: "marker appended", route: "issue", ct: "application/json", body: `{"title":"t","body":"text"}`,
			wantBody: `{"title":"t","body":"text\n<!-- toolguard:` + testKey + ` -->"}`},
		{name: "marker replaced", route: "issue", ct: "application/json", body: `{"title":"t","body":"text\n<!-- toolguard:` + strings.Repeat("f", 64) + ` -->"}`,
			wantBody: `{"title":"t","body":"text\n<!-- toolguard:` + testKey + ` -->"}`},
		{name: "header and conditional", route: "put", ct: "application/octet-stream", body: "bytes",
			wantBody: "bytes", wantHeader: map[string]string{"X-Amz-Meta-Toolguard-Key": testKey, "If-None-Match": "*"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			got, err := routeNamed(t, api, tc.route).Apply(h, tc.ct, []byte(tc.body), testKey)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.wantBody {
				t.Errorf("body = %s\nwant %s", got, tc.wantBody)
			}
			for k, v := range tc.wantHeader {
				if h.Get(k) != v {
					t.Errorf("header %s = %q, want %q", k, h.Get(k), v)
				}
			}
		})
	}
	t.Run("form into JSON refused", func(t *testing.T) {
		if _, err := routeNamed(t, api, "charge").Apply(http.Header{}, "application/json", []byte(`{}`), testKey); !errors.Is(err, ErrInvalidBody) {
			t.Errorf("error = %v, want ErrInvalidBody", err)
		}
	})
}

// TestInjectedFieldOutOfKey: a retry that already carries the injected
// field (or marker) keys like the first call.
func TestInjectedFieldOutOfKey(t *testing.T) {
	api := mustParse(t, requestSideRules)
	d := &Deriver{}
	tests := []struct {
		name, route, ct, first, retry string
	}{
		{name: "form field on a whole-body key", route: "charge", ct: formType,
			first: "amount=100", retry: "amount=100&metadata%5Btoolguard_key%5D=" + testKey},
		{name: "appended marker on a key field", route: "issue", ct: "application/json",
			first: `{"title":"t","body":"text"}`, retry: `{"title":"t","body":"text\n<!-- toolguard:` + testKey + ` -->"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := routeNamed(t, api, tc.route)
			a, err := d.Derive(r, Input{ContentType: tc.ct, Body: []byte(tc.first)})
			if err != nil {
				t.Fatal(err)
			}
			b, err := d.Derive(r, Input{ContentType: tc.ct, Body: []byte(tc.retry)})
			if err != nil {
				t.Fatal(err)
			}
			if a.Key != b.Key {
				t.Errorf("keys differ:\n%s\n%s", a.Material, b.Material)
			}
		})
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

// FuzzParseGraphQLDocument: the document parser never panics, and an
// operation it returns has a known type.
func FuzzParseGraphQLDocument(f *testing.F) {
	for _, s := range []string{
		"mutation A($i: In!) @d(x: 1) { a: issueCreate(input: $i) { id } }",
		"{ a } fragment F on T { b }",
		`query { c(s: """a""" t: "b\"}") }`,
		"subscription S { e }",
		"# c\n{",
	} {
		f.Add(s, "")
	}
	f.Fuzz(func(t *testing.T, doc, name string) {
		op, err := ParseGraphQLDocument(doc, name)
		if err != nil {
			if !errors.Is(err, ErrInvalidBody) {
				t.Fatalf("error %v does not wrap ErrInvalidBody", err)
			}
			return
		}
		if op.Type != "query" && op.Type != "mutation" && op.Type != "subscription" {
			t.Fatalf("operation type %q", op.Type)
		}
	})
}

func TestRawContentKey(t *testing.T) {
	r := routeNamed(t, mustParse(t, requestSideRules), "put")
	d := &Deriver{}
	key := func(ct, body, object string) string {
		t.Helper()
		it, err := d.Derive(r, Input{ContentType: ct, Body: []byte(body), PathValues: map[string]string{"bucket": "b", "object": object}})
		if err != nil {
			t.Fatalf("Derive: %v", err)
		}
		return it.Key
	}
	base := key("application/octet-stream", "\x00\xffbytes", "a.bin")
	tests := []struct {
		name, ct, body, object string
		same                   bool
	}{
		{name: "same bytes", ct: "application/octet-stream", body: "\x00\xffbytes", object: "a.bin", same: true},
		{name: "other bytes", ct: "application/octet-stream", body: "\x00\xfebytes", object: "a.bin"},
		{name: "other type", ct: "text/plain", body: "\x00\xffbytes", object: "a.bin"},
		{name: "other object", ct: "application/octet-stream", body: "\x00\xffbytes", object: "b.bin"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := key(tc.ct, tc.body, tc.object) == base; got != tc.same {
				t.Errorf("same key = %v, want %v", got, tc.same)
			}
		})
	}
}

// TestInjectRefusesBodiesThatCannotTakeIt: Derive refuses, before anything
// is journaled, a body the route's injection cannot be written into.
func TestInjectRefusesBodiesThatCannotTakeIt(t *testing.T) {
	api := mustParse(t, requestSideRules)
	tests := []struct{ name, route, ct, body, want string }{
		{name: "form field into JSON", route: "charge", ct: "application/json", body: `{"amount":1}`,
			want: "invalid body: route requestside/charge injects the key into a form body (application/x-www-form-urlencoded)"},
		{name: "JSON path into a form", route: "email", ct: formType, body: "To=a",
			want: "invalid body: route requestside/email injects the key into a JSON object body"},
		{name: "JSON path into an array", route: "email", ct: "application/json", body: `[{"To":"a"}]`,
			want: "invalid body: route requestside/email injects the key into a JSON object body"},
		{name: "append to a number", route: "issue", ct: "application/json", body: `{"title":"t","body":1}`,
			want: `invalid body: route requestside/issue: inject.append: "body" is not a string`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := (&Deriver{}).Derive(routeNamed(t, api, tc.route), Input{ContentType: tc.ct, Body: []byte(tc.body)})
			if err == nil || err.Error() != tc.want || !errors.Is(err, ErrInvalidBody) {
				t.Errorf("Derive() error = %v, want %q", err, tc.want)
			}
		})
	}
	native := mustParse(t, "api: sq\nhosts: [sq.example]\nroutes:\n  - name: pay\n    match: POST /v2/payments\n    effect: irreversible\n    native_idempotency: {body: idempotency_key}\n")
	mp := multipartBody(t, part{name: "a", content: "b"})
	if _, err := (&Deriver{}).Derive(native.Routes[0], mp); err == nil || err.Error() != "invalid body: route sq/pay sends its idempotency key in a JSON or form body field" {
		t.Errorf("native body key into multipart: %v", err)
	}
	h := http.Header{}
	got, err := routeNamed(t, api, "charge").Apply(h, formType, nil, testKey)
	if err != nil || string(got) != "metadata%5Btoolguard_key%5D="+testKey {
		t.Errorf("inject into an empty form = %q, %v", got, err)
	}
}

// FuzzMultipart: any multipart body either gives a valid JSON object or
// an error wrapping ErrInvalidBody.
func FuzzMultipart(f *testing.F) {
	in := multipartBody(f, part{name: "purpose", content: "x"}, part{name: "file", filename: "a.pdf", contentType: "application/pdf", content: "%PDF"})
	f.Add(in.ContentType, in.Body)
	f.Add("multipart/form-data; boundary=b", []byte("--b\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nv\r\n--b--\r\n"))
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		doc, err := CanonicalBody(nil, contentType, body)
		if err != nil {
			if !errors.Is(err, ErrInvalidBody) {
				t.Fatalf("error %v does not wrap ErrInvalidBody", err)
			}
			return
		}
		if !json.Valid(doc) {
			t.Fatalf("canonical body is not JSON: %s", doc)
		}
	})
}
