package rules

import (
	"errors"
	"maps"
	"strings"
	"testing"
)

// unlistedRules is a provider whose file guards the writes it does not
// list, with a native key, volatile fields and a route with a reference.
const unlistedRules = `
api: pay
hosts: [pay.example.com, "*.files.pay.example.com"]
credential: {header: Authorization}
native_idempotency: {header: Idempotency-Key, ttl: 24h}
volatile: ['expand\[\]', request_id, 'meta.trace']
routes:
  - name: create_charge
    match: POST /v1/charges
    effect: irreversible
    key:
      reference: ["metadata[order_id]"]
      fields: [amount, currency]
      ignore: [description]
  - name: old_charge
    match: POST /v1/old_charges
    effect: irreversible
    key:
      fields: [amount, currency, "metadata[order_id]"]
  - name: list
    match: GET /v1/charges
    effect: safe
  - name: search
    match: POST /v1/search
    effect: none
    reason: a search only reads
  - name: graphql_create
    match: POST /graphql
    effect: irreversible
    graphql: {operation: Create}
`

func unlistedSet(t testing.TB, src string) *Set {
	t.Helper()
	set, err := NewSet(mustParse(t, src))
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// A write no route matches gets the file's route "unlisted" (irreversible,
// the file's native key); a read, a listed route and a route of effect
// none do not.
func TestMatchUnlisted(t *testing.T) {
	guard := unlistedSet(t, unlistedRules)
	pass := unlistedSet(t, unlistedRules+"unlisted: pass\n")
	tests := []struct {
		name, host, method, path string
		wantRoute                string // "" = no match
		wantValues               map[string]string
		passRoute                string // under unlisted: pass
	}{
		{name: "post", host: "pay.example.com:443", method: "POST", path: "/v1/products", wantRoute: "unlisted", wantValues: map[string]string{"path": "v1/products"}},
		{name: "put", host: "pay.example.com", method: "PUT", path: "/v1/a/b", wantRoute: "unlisted", wantValues: map[string]string{"path": "v1/a/b"}},
		{name: "patch", host: "pay.example.com", method: "PATCH", path: "/v1/charges", wantRoute: "unlisted", wantValues: map[string]string{"path": "v1/charges"}},
		{name: "delete", host: "x.files.pay.example.com", method: "DELETE", path: "/f_1", wantRoute: "unlisted", wantValues: map[string]string{"path": "f_1"}},
		{name: "root", host: "pay.example.com", method: "POST", path: "/", wantRoute: "unlisted", wantValues: map[string]string{"path": ""}},
		{name: "listed route", host: "pay.example.com", method: "POST", path: "/v1/charges", wantRoute: "create_charge", passRoute: "create_charge"},
		{name: "effect none", host: "pay.example.com", method: "POST", path: "/v1/search", wantRoute: "search", passRoute: "search"},
		{name: "get", host: "pay.example.com", method: "GET", path: "/v1/products"},
		{name: "head", host: "pay.example.com", method: "HEAD", path: "/v1/products"},
		{name: "options", host: "pay.example.com", method: "OPTIONS", path: "/v1/products"},
		{name: "safe read", host: "pay.example.com", method: "GET", path: "/v1/charges", wantRoute: "list", passRoute: "list"},
		{name: "other host", host: "example.org", method: "POST", path: "/v1/products"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, c := range []struct {
				set  *Set
				want string
			}{{guard, tc.wantRoute}, {pass, tc.passRoute}} {
				r, vals := c.set.Match(tc.host, tc.method, tc.path)
				got := ""
				if r != nil {
					got = r.Name
				}
				if got != c.want {
					t.Fatalf("Match(%q, %q, %q) = %q, want %q", tc.host, tc.method, tc.path, got, c.want)
				}
				if got == UnlistedRoute && !maps.Equal(vals, tc.wantValues) {
					t.Errorf("path values = %v, want %v", vals, tc.wantValues)
				}
			}
		})
	}
	r, _ := guard.Match("pay.example.com", "POST", "/v1/products")
	if !r.Unlisted() || r.Effect != EffectIrreversible || r.Method != "POST" || r.API.Name != "pay" ||
		r.NativeIdempotency == nil || r.NativeIdempotency.Header != "Idempotency-Key" {
		t.Errorf("unlisted route = %+v, want irreversible POST of api pay with the file's native key", r)
	}
	if r, _ := guard.Match("pay.example.com", "POST", "/v1/charges"); r.Unlisted() {
		t.Errorf("a listed route is unlisted")
	}
	if guard.API("pay.example.com:443").Name != "pay" || guard.API("example.org:443") != nil {
		t.Errorf("API() does not find the host's API")
	}
}

// A GraphQL mutation that no route selects is an unlisted write; a query
// still passes.
func TestSelectGraphQLUnlisted(t *testing.T) {
	set := unlistedSet(t, unlistedRules)
	first, _ := set.Match("pay.example.com", "POST", "/graphql")
	r, pass, err := SelectGraphQL(first, []byte(`{"query":"mutation Other { x { id } }"}`))
	if err != nil || pass || !r.Unlisted() {
		t.Errorf("unselected mutation: %v, pass %v, %v; want the unlisted route", r, pass, err)
	}
	if r, pass, err := SelectGraphQL(first, []byte(`{"query":"query { x { id } }"}`)); err != nil || !pass || r != nil {
		t.Errorf("query: %v, pass %v, %v; want pass", r, pass, err)
	}
}

// The key of an unlisted write is the whole request: method, host, path,
// query and body, less the file's volatile fields (expand[] also as
// expand[0], expand[1]...) and headers other than the credential.
func TestDeriveUnlisted(t *testing.T) {
	set := unlistedSet(t, unlistedRules)
	d := &Deriver{Secret: []byte("s")}
	const form = "application/x-www-form-urlencoded"
	type req struct {
		method, host, path, ct, body, cred, workflow string
	}
	base := req{method: "POST", host: "pay.example.com:443", path: "/v1/products", ct: form, body: "name=Shirt&price=20", cred: "Bearer a"}
	key := func(t *testing.T, q req) *Intent {
		t.Helper()
		path, query, _ := strings.Cut(q.path, "?")
		r, vals := set.Match(q.host, q.method, path)
		if !r.Unlisted() {
			t.Fatalf("%s %s: route %v, want unlisted", q.method, q.path, r)
		}
		it, err := d.Derive(r, Input{ContentType: q.ct, Body: []byte(q.body), RawQuery: query, PathValues: vals,
			EscapedPath: path, Credential: q.cred, Workflow: q.workflow, Host: q.host})
		if err != nil {
			t.Fatalf("Derive: %v", err)
		}
		return it
	}
	want := key(t, base)
	tests := []struct {
		name string
		edit func(*req)
		same bool
	}{
		{name: "field order", edit: func(q *req) { q.body = "price=20&name=Shirt" }, same: true},
		{name: "expand[]", edit: func(q *req) { q.body += "&expand[]=tax" }, same: true},
		{name: "expand[0] and expand[1]", edit: func(q *req) { q.body += "&expand[0]=tax&expand[1]=x" }, same: true},
		{name: "volatile request_id", edit: func(q *req) { q.body += "&request_id=r2" }, same: true},
		{name: "volatile query", edit: func(q *req) { q.path += "?expand[0]=tax&request_id=9" }, same: true},
		{name: "port", edit: func(q *req) { q.host = "pay.example.com" }, same: true},
		{name: "other field", edit: func(q *req) { q.body += "&color=red" }},
		{name: "other value", edit: func(q *req) { q.body = "name=Shirt&price=21" }},
		{name: "expanded is not expand", edit: func(q *req) { q.body += "&expanded[0]=x" }},
		{name: "named member under expand", edit: func(q *req) { q.body += "&expand[a]=x" }},
		{name: "other method", edit: func(q *req) { q.method = "PUT" }},
		{name: "other path", edit: func(q *req) { q.path = "/v1/prices" }},
		{name: "query", edit: func(q *req) { q.path += "?active=true" }},
		{name: "other host", edit: func(q *req) { q.host = "a.files.pay.example.com" }},
		{name: "other credential", edit: func(q *req) { q.cred = "Bearer b" }},
		{name: "workflow", edit: func(q *req) { q.workflow = "wf" }},
		{name: "json", edit: func(q *req) { q.ct, q.body = "application/json", `{"name":"Shirt","price":"20"}` }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := base
			tc.edit(&q)
			got := key(t, q)
			if (got.Key == want.Key) != tc.same {
				t.Errorf("same key = %v, want %v\n%s\n%s", got.Key == want.Key, tc.same, got.Material, want.Material)
			}
		})
	}
	if m := string(want.Material); !strings.Contains(m, `"method":"POST"`) || !strings.Contains(m, `"route":"unlisted"`) ||
		!strings.Contains(m, `"host":"pay.example.com"`) || !strings.Contains(m, `"path":{"path":"v1/products"}`) {
		t.Errorf("material %s lacks the method, route, host or path", m)
	}
	if got := want.Summary; len(got) != 2 || got[0].Field != "name" || got[1].Field != "price" {
		t.Errorf("summary = %v, want the names name, price", got)
	}
}

// Regression: a body of a type that is neither JSON nor a form nor
// multipart (an upload, text) was refused with invalid-body; it is keyed
// by the hash of its bytes, on every kind of whole-body key.
func TestDeriveRawBodies(t *testing.T) {
	set := unlistedSet(t, unlistedRules)
	unlisted, _ := set.Match("pay.example.com", "PUT", "/v1/files/a.bin")
	keyed := mustParse(t, keyRules)
	routes := map[string]*Route{
		"unlisted": unlisted,
		"fallback": Fallback("POST", "shop.example:443", "/v1/orders"),
		"ignore":   routeByName(t, keyed, "ignore"),
		"whole":    routeByName(t, keyed, "whole"),
	}
	tests := []struct {
		name, ct, body string
	}{
		{name: "octet-stream", ct: "application/octet-stream", body: "\x00\xffbytes"},
		{name: "csv", ct: "text/csv", body: "a,b"},
		{name: "json as text", ct: "text/plain", body: `{"x":1}`},
		{name: "untyped text", ct: "", body: "x=1"},
	}
	d := &Deriver{}
	for _, tc := range tests {
		for name, r := range routes {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				in := Input{ContentType: tc.ct, Body: []byte(tc.body), Credential: "c", EscapedPath: "/v1/files/a.bin"}
				a, err := d.Derive(r, in)
				if err != nil {
					t.Fatalf("Derive: %v", err)
				}
				if !strings.Contains(string(a.Doc), `"content_sha256"`) {
					t.Errorf("canonical body %s, want the content hash", a.Doc)
				}
				b, _ := d.Derive(r, in)
				in.Body = append([]byte(tc.body), '!')
				c, _ := d.Derive(r, in)
				if a.Key != b.Key || a.Key == c.Key {
					t.Errorf("same bytes: same key %v; other bytes: same key %v", a.Key == b.Key, a.Key == c.Key)
				}
			})
		}
	}
}

// A route with key.reference keys on the reference and its fields when the
// body holds it (the key of a route with the same fields, all required,
// that is: a pack that moved its reference to key.reference keeps its
// keys), and on the whole request, less key.ignore and volatile, when it
// does not; it never refuses for a missing field.
func TestDeriveReference(t *testing.T) {
	set := unlistedSet(t, unlistedRules)
	api := set.APIs[0]
	ref, old := routeByName(t, api, "create_charge"), routeByName(t, api, "old_charge")
	d := &Deriver{Secret: []byte("s")}
	const form = "application/x-www-form-urlencoded"
	derive := func(t *testing.T, r *Route, body string) *Intent {
		t.Helper()
		it, err := d.Derive(r, Input{ContentType: form, Body: []byte(body), Credential: "c"})
		if err != nil {
			t.Fatalf("Derive(%s): %v", body, err)
		}
		return it
	}
	withRef := "amount=100&currency=eur&metadata[order_id]=o1&description=a"
	a := derive(t, ref, withRef)
	if want := strings.Replace(string(derive(t, old, withRef).Material), `"route":"old_charge"`, `"route":"create_charge"`, 1); string(a.Material) != want {
		t.Errorf("material with the reference:\n%s\nwant that of fields [amount, currency, metadata[order_id]]:\n%s", a.Material, want)
	}
	if got := a.Summary; len(got) != 3 || got[0].Field != "metadata[order_id]" || got[0].Value != `"o1"` {
		t.Errorf("summary = %v, want the reference first, then the fields", got)
	}
	tests := []struct {
		name, body string
		sameAs     string // "" = a key of its own
	}{
		{name: "reference, other description", body: "amount=100&currency=eur&metadata[order_id]=o1&description=b", sameAs: withRef},
		{name: "reference, field missing", body: "currency=eur&metadata[order_id]=o1"},
		{name: "no reference", body: "amount=100&currency=eur&description=a"},
		{name: "no reference, field order", body: "description=a&currency=eur&amount=100", sameAs: "amount=100&currency=eur&description=a"},
		{name: "no reference, ignored description", body: "amount=100&currency=eur&description=b", sameAs: "amount=100&currency=eur&description=a"},
		{name: "no reference, volatile expand", body: "amount=100&currency=eur&expand[0]=x", sameAs: "amount=100&currency=eur"},
		{name: "no reference, other field", body: "amount=100&currency=eur&customer=c2", sameAs: ""},
		{name: "empty reference is none", body: "amount=100&currency=eur&metadata[order_id]=", sameAs: ""},
		{name: "empty body", body: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := derive(t, ref, tc.body)
			if tc.sameAs != "" {
				if want := derive(t, ref, tc.sameAs); got.Key != want.Key {
					t.Errorf("key differs from that of %s:\n%s\n%s", tc.sameAs, got.Material, want.Material)
				}
				return
			}
			if got.Key == a.Key {
				t.Errorf("key equals that of %s", withRef)
			}
		})
	}
	none := derive(t, ref, "amount=100&currency=eur")
	if m := string(none.Material); !strings.Contains(m, `"reference":null`) || !strings.Contains(m, `"fields":{"amount":"100","currency":"eur"}`) {
		t.Errorf("material without the reference = %s, want the whole body and \"reference\":null", m)
	}
	// A whole body that spells the reference-mode fields object literally
	// still keys apart: the material says the reference was absent.
	json := Input{ContentType: "application/json", Body: []byte(`{"amount":"100","currency":"eur","metadata[order_id]\\u0000":"o1"}`), Credential: "c"}
	if it, err := d.Derive(ref, json); err != nil || it.Key == a.Key {
		t.Errorf("a body without the reference shares the reference's key (%v)", err)
	}
	if _, err := d.Derive(old, Input{ContentType: form, Body: []byte("amount=1"), Credential: "c"}); !errors.Is(err, ErrMissingField) {
		t.Errorf("a route without reference: error %v, want missing fields as before", err)
	}
}
