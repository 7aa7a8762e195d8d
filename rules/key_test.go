package rules

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

const keyRules = `
api: payments
hosts: [payments.example.com]
credential: {header: Authorization}
routes:
  - name: fields
    match: POST /v1/customers/{customer}/invoices
    effect: irreversible
    key: {fields: [currency, lines, "meta.ref"]}
  - name: optional
    match: POST /v1/quotes
    effect: irreversible
    key: {fields: [currency, lines, "meta.ref"], optional: [lines, "meta.ref"]}
  - name: ignore
    match: POST /v1/charges
    effect: irreversible
    key: {ignore: [metadata.trace_id, "lines.#.trace", "a\\.b"]}
  - name: whole
    match: POST /v1/transfers
    effect: irreversible
  - name: credential_only
    match: POST /v1/refunds
    effect: irreversible
    key: {scope: [credential]}
  - name: unscoped
    match: POST /v1/payouts
    effect: irreversible
    key: {scope: []}
`

func routeByName(t testing.TB, api *API, name string) *Route {
	t.Helper()
	for _, r := range api.Routes {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no route %q", name)
	return nil
}

func mustParse(t testing.TB, src string) *API {
	t.Helper()
	api, err := Parse("test.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return api
}

func jsonIn(body string) Input {
	return Input{ContentType: "application/json", Body: []byte(body), Credential: "Bearer sk_1", Workflow: "wf-1"}
}

func TestDeriveSameOrDifferent(t *testing.T) {
	api := mustParse(t, keyRules)
	with := func(in Input, f func(*Input)) Input { f(&in); return in }
	base := `{"currency":"eur","lines":[{"amount":1,"trace":"t1"}],"meta":{"ref":"r1","note":"n"},"metadata":{"trace_id":"x"},"a.b":1}`
	pv := map[string]string{"customer": "c_1"}
	tests := []struct {
		name     string
		route    string
		a, b     Input
		wantSame bool
	}{
		{name: "fields: order and whitespace", route: "fields", a: jsonIn(base),
			b:        jsonIn(` { "meta":{"note":"n","ref":"r1"}, "lines":[{"trace":"t1","amount":1.0}],"currency":"eur","metadata":{"trace_id":"x"},"a.b":1 }`),
			wantSame: true},
		{name: "fields: unselected field changes", route: "fields", a: jsonIn(base),
			b: jsonIn(`{"currency":"eur","lines":[{"amount":1,"trace":"t1"}],"meta":{"ref":"r1","note":"other"},"extra":true}`), wantSame: true},
		{name: "fields: selected field changes", route: "fields", a: jsonIn(base),
			b: jsonIn(`{"currency":"usd","lines":[{"amount":1,"trace":"t1"}],"meta":{"ref":"r1"}}`)},
		{name: "fields: nested selected field changes", route: "fields", a: jsonIn(base),
			b: jsonIn(`{"currency":"eur","lines":[{"amount":1,"trace":"t1"}],"meta":{"ref":"r2"}}`)},
		{name: "fields: missing optional equals null", route: "optional", a: jsonIn(`{"currency":"eur"}`),
			b: jsonIn(`{"currency":"eur","lines":null}`), wantSame: true},
		{name: "fields: path values differ", route: "fields",
			a: with(jsonIn(base), func(in *Input) { in.PathValues = pv }),
			b: with(jsonIn(base), func(in *Input) { in.PathValues = map[string]string{"customer": "c_2"} })},
		{name: "ignore: ignored fields change", route: "ignore", a: jsonIn(base),
			b:        jsonIn(`{"currency":"eur","lines":[{"amount":1,"trace":"t2"}],"meta":{"ref":"r1","note":"n"},"metadata":{"trace_id":"y"},"a.b":2}`),
			wantSame: true},
		{name: "ignore: ignored fields absent", route: "ignore", a: jsonIn(base),
			b:        jsonIn(`{"currency":"eur","lines":[{"amount":1}],"meta":{"ref":"r1","note":"n"},"metadata":{}}`),
			wantSame: true},
		{name: "ignore: other field changes", route: "ignore", a: jsonIn(base),
			b: jsonIn(`{"currency":"eur","lines":[{"amount":1,"trace":"t1"}],"meta":{"ref":"r1","note":"changed"},"metadata":{"trace_id":"x"},"a.b":1}`)},
		{name: "whole: any field changes", route: "whole", a: jsonIn(base),
			b: jsonIn(`{"currency":"eur","lines":[{"amount":1,"trace":"t2"}],"meta":{"ref":"r1","note":"n"},"metadata":{"trace_id":"x"},"a.b":1}`)},
		{name: "whole: number forms", route: "whole", a: jsonIn(`{"amount":100}`), b: jsonIn(`{"amount":1e2}`), wantSame: true},
		// A form and a JSON body with the same members were one key.
		{name: "whole: form and json of the same strings differ", route: "whole", a: jsonIn(`{"a":"1","b":["2","3"]}`),
			b: Input{ContentType: "application/x-www-form-urlencoded", Body: []byte("b=2&a=1&b=3"), Credential: "Bearer sk_1", Workflow: "wf-1"}},
		{name: "whole: form order", route: "whole",
			a:        Input{ContentType: "application/x-www-form-urlencoded", Body: []byte("a=1&b=2")},
			b:        Input{ContentType: "application/x-www-form-urlencoded", Body: []byte("b=2&a=1")},
			wantSame: true},
		{name: "whole: repeated form values order matters", route: "whole",
			a: Input{ContentType: "application/x-www-form-urlencoded", Body: []byte("t=1&t=2")},
			b: Input{ContentType: "application/x-www-form-urlencoded", Body: []byte("t=2&t=1")}},
		{name: "query order", route: "whole",
			a:        with(jsonIn(base), func(in *Input) { in.RawQuery = "b=2&a=1" }),
			b:        with(jsonIn(base), func(in *Input) { in.RawQuery = "a=1&b=2" }),
			wantSame: true},
		{name: "query differs", route: "whole",
			a: with(jsonIn(base), func(in *Input) { in.RawQuery = "a=1" }),
			b: with(jsonIn(base), func(in *Input) { in.RawQuery = "a=2" })},
		{name: "empty query is no query", route: "whole",
			a: with(jsonIn(base), func(in *Input) { in.RawQuery = "&" }), b: jsonIn(base), wantSame: true},
		{name: "credential differs", route: "whole", a: jsonIn(base),
			b: with(jsonIn(base), func(in *Input) { in.Credential = "Bearer sk_2" })},
		{name: "no credential differs from some", route: "whole", a: jsonIn(base),
			b: with(jsonIn(base), func(in *Input) { in.Credential = "" })},
		{name: "workflow differs", route: "whole", a: jsonIn(base),
			b: with(jsonIn(base), func(in *Input) { in.Workflow = "wf-2" })},
		{name: "credential scope ignores workflow", route: "credential_only", a: jsonIn(base),
			b: with(jsonIn(base), func(in *Input) { in.Workflow = "wf-2" }), wantSame: true},
		{name: "credential scope keeps credential", route: "credential_only", a: jsonIn(base),
			b: with(jsonIn(base), func(in *Input) { in.Credential = "Bearer sk_2" })},
		{name: "empty scope ignores credential and workflow", route: "unscoped", a: jsonIn(base),
			b: with(jsonIn(base), func(in *Input) { in.Credential, in.Workflow = "other", "wf-9" }), wantSame: true},
	}
	d := &Deriver{Secret: []byte("secret")}
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

func TestDeriveMaterial(t *testing.T) {
	api := mustParse(t, keyRules)
	d := &Deriver{Secret: []byte("secret")}
	in := jsonIn(`{"meta":{"ref":"r1"},"currency":"eur","lines":[{"amount":1.50}],"x":1}`)
	in.PathValues = map[string]string{"customer": "c_1"}
	in.RawQuery = "expand=lines&dry=0"
	got, err := d.Derive(routeByName(t, api, "fields"), in)
	if err != nil {
		t.Fatal(err)
	}
	mac := hmac.New(sha256.New, []byte("secret"))
	mac.Write([]byte("payments\x00Bearer sk_1"))
	cred := hex.EncodeToString(mac.Sum(nil))
	want := `{"api":"payments","fields":{"currency":"eur","lines":[{"amount":1.5}],"meta.ref":"r1"},` +
		`"media_type":"application/json","path":{"customer":"c_1"},"query":{"dry":"0","expand":"lines"},"route":"fields",` +
		`"scope":{"credential":"` + cred + `","workflow":"wf-1"}}`
	if string(got.Material) != want {
		t.Errorf("Material =\n%s\nwant\n%s", got.Material, want)
	}
	if sum := sha256.Sum256([]byte(want)); got.Key != hex.EncodeToString(sum[:]) {
		t.Errorf("Key = %s, want sha256 of Material", got.Key)
	}
	doc := `{"currency":"eur","lines":[{"amount":1.5}],"meta":{"ref":"r1"},"x":1}`
	if string(got.Doc) != doc {
		t.Errorf("Doc = %s, want %s", got.Doc, doc)
	}
	if sum := sha256.Sum256([]byte(doc)); got.BodyHash != hex.EncodeToString(sum[:]) {
		t.Errorf("BodyHash = %s, want sha256 of Doc", got.BodyHash)
	}
	// The intent owns its bytes: later derivations must not change it.
	key, mat := got.Key, string(got.Material)
	for range 3 {
		d.Derive(routeByName(t, api, "whole"), jsonIn(`{"other":"body"}`))
	}
	if got.Key != key || string(got.Material) != mat || string(got.Doc) != doc {
		t.Errorf("intent changed by a later Derive")
	}
}

func TestDeriveLongSecret(t *testing.T) {
	secret := make([]byte, 100)
	for i := range secret {
		secret[i] = byte(i)
	}
	var s deriveScratch
	got := (&Deriver{Secret: secret}).appendMAC(nil, &s, "api", "cred")
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte("api\x00cred"))
	if want := hex.EncodeToString(mac.Sum(nil)); string(got) != want {
		t.Errorf("appendMAC = %s, want %s", got, want)
	}
}

func TestDeriveErrors(t *testing.T) {
	api := mustParse(t, keyRules)
	r := routeByName(t, api, "whole")
	tests := []struct {
		name string
		in   Input
		want string
	}{
		{name: "invalid json", in: jsonIn(`{"a":1,}`), want: `invalid JSON at offset 7: unexpected character '}', want an object key`},
		{name: "duplicate key", in: jsonIn(`{"a":1,"a":2}`), want: `invalid JSON at offset 7: duplicate key "a"`},
		{name: "bad form", in: Input{ContentType: "application/x-www-form-urlencoded", Body: []byte("a=%G1")}, want: `invalid form body at offset 2: invalid escape "%G1"`},
		{name: "bad query", in: Input{RawQuery: "a=1&b=%"}, want: `invalid query string at offset 6: invalid escape "%"`},
	}
	d := &Deriver{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := d.Derive(r, tc.in)
			if err == nil || err.Error() != tc.want || !errors.Is(err, ErrInvalidBody) {
				t.Errorf("Derive() error = %v, want %q wrapping ErrInvalidBody", err, tc.want)
			}
		})
	}
}

func TestFallback(t *testing.T) {
	d := &Deriver{Secret: []byte("s")}
	in := jsonIn(`{"a":1}`)
	key := func(method, host, path string) string {
		it, err := d.Derive(Fallback(method, host, path), in)
		if err != nil {
			t.Fatal(err)
		}
		return it.Key
	}
	base := key("POST", "api.example.com", "/v1/things")
	tests := []struct {
		name               string
		method, host, path string
		wantSame           bool
	}{
		{name: "same request", method: "POST", host: "api.example.com", path: "/v1/things", wantSame: true},
		{name: "host case", method: "POST", host: "API.example.com", path: "/v1/things", wantSame: true},
		{name: "other host", method: "POST", host: "api2.example.com", path: "/v1/things"},
		{name: "other port", method: "POST", host: "api.example.com:8443", path: "/v1/things"},
		{name: "other path", method: "POST", host: "api.example.com", path: "/v1/other"},
		{name: "other method", method: "PUT", host: "api.example.com", path: "/v1/things"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if same := key(tc.method, tc.host, tc.path) == base; same != tc.wantSame {
				t.Errorf("same key = %v, want %v", same, tc.wantSame)
			}
		})
	}
	r := Fallback("POST", "api.example.com:443", "/x")
	if r.API.Name != "unmatched" || r.Name != "POST api.example.com:443" || r.Effect != EffectIrreversible || r.API.Credential != "Authorization" {
		t.Errorf("Fallback() = %+v", r)
	}
}

func TestDeriveRedact(t *testing.T) {
	api := mustParse(t, `
api: cards
hosts: [cards.example.com]
routes:
  - name: charge
    match: POST /charge
    effect: irreversible
    key: {ignore: [trace]}
    redact: [card.number, "holders.#.ssn"]
  - name: charge_fields
    match: POST /charge2
    effect: irreversible
    key: {fields: [card, amount]}
    redact: [card.number]
`)
	d := &Deriver{Secret: []byte("s")}
	body := `{"amount":5,"card":{"number":"4242424242424242","exp":"12/30"},"holders":[{"ssn":"078-05-1120","name":"a"}],"trace":"x"}`
	for name, secrets := range map[string][]string{
		"charge":        {"4242424242424242", "078-05-1120"},
		"charge_fields": {"4242424242424242"},
	} {
		t.Run(name, func(t *testing.T) {
			r := routeByName(t, api, name)
			it, err := d.Derive(r, jsonIn(body))
			if err != nil {
				t.Fatal(err)
			}
			for _, secret := range secrets {
				if strings.Contains(string(it.Material), secret) || strings.Contains(string(it.Redacted), secret) {
					t.Errorf("Material or Redacted holds %q:\n%s\n%s", secret, it.Material, it.Redacted)
				}
			}
			if !strings.Contains(string(it.Doc), "4242424242424242") {
				t.Errorf("Doc lost the card number: %s", it.Doc)
			}
			if !strings.Contains(string(it.Redacted), `"number":"redacted:`) || !strings.Contains(string(it.Redacted), `"trace":"x"`) {
				t.Errorf("Redacted = %s", it.Redacted)
			}
			same, _ := d.Derive(r, jsonIn(strings.Replace(body, `"trace":"x"`, `"trace":"y"`, 1)))
			other, _ := d.Derive(r, jsonIn(strings.Replace(body, "4242424242424242", "4000056655665556", 1)))
			if same.Key != it.Key || other.Key == it.Key {
				t.Errorf("redacted value must still count in the key: same %v, other %v", same.Key == it.Key, other.Key == it.Key)
			}
		})
	}
	plain := mustParse(t, keyRules)
	it, _ := d.Derive(routeByName(t, plain, "whole"), jsonIn(`{"a":1}`))
	if &it.Redacted[0] != &it.Doc[0] {
		t.Errorf("Redacted is not Doc for a route that redacts nothing")
	}
}

// A lean derivation gives the same key and body hash, and keeps the
// canonical body only for routes whose templates may need it.
func TestDeriveLean(t *testing.T) {
	api, err := Parse("lean.yaml", []byte(`api: lean
hosts: [h.example]
routes:
  - name: plain
    match: POST /a
    effect: irreversible
  - name: looked_up
    match: POST /b
    effect: irreversible
    lookup:
      request: GET https://h.example/b?r={{body.ref}}
      found: {status: 200}
`))
	if err != nil {
		t.Fatal(err)
	}
	in := Input{ContentType: "application/json", Body: []byte(`{"ref":"x","n":1}`)}
	for _, r := range api.Routes {
		full, err1 := (&Deriver{}).Derive(r, in)
		lean, err2 := (&Deriver{Lean: true}).Derive(r, in)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if full.Key != lean.Key || full.BodyHash != lean.BodyHash {
			t.Errorf("%s: lean key %s/%s, want %s/%s", r.Name, lean.Key, lean.BodyHash, full.Key, full.BodyHash)
		}
		if lean.Material != nil || (lean.Doc != nil) != (r.Lookup != nil) {
			t.Errorf("%s: lean intent keeps material %d bytes, doc %d bytes", r.Name, len(lean.Material), len(lean.Doc))
		}
	}
}

// Regression: a request that lacked its route's key fields was keyed with
// null in their place, so every such request shared one key and was
// answered with another intent's stored response.
func TestDeriveMissingFields(t *testing.T) {
	api := mustParse(t, keyRules)
	form := func(body string) Input {
		return Input{ContentType: "application/x-www-form-urlencoded", Body: []byte(body)}
	}
	tests := []struct {
		name        string
		route       string
		in          Input
		wantMissing []string // nil: Derive succeeds
	}{
		{name: "all present", route: "fields", in: jsonIn(`{"currency":"eur","lines":[],"meta":{"ref":"r"}}`)},
		{name: "null counts as present", route: "fields", in: jsonIn(`{"currency":null,"lines":null,"meta":{"ref":null}}`)},
		{name: "one missing", route: "fields", in: jsonIn(`{"currency":"eur","lines":[]}`), wantMissing: []string{"meta.ref"}},
		{name: "all missing, in rule order", route: "fields", in: jsonIn(`{"client":"a","item":"z"}`),
			wantMissing: []string{"currency", "lines", "meta.ref"}},
		{name: "empty body", route: "fields", in: jsonIn(``), wantMissing: []string{"currency", "lines", "meta.ref"}},
		{name: "form without the fields", route: "fields", in: form("client=a&item=z"),
			wantMissing: []string{"currency", "lines", "meta.ref"}},
		{name: "nested path is not a form key", route: "fields", in: form("currency=eur&lines=1&meta[ref]=r"),
			wantMissing: []string{"meta.ref"}},
		{name: "optional missing", route: "optional", in: jsonIn(`{"currency":"eur"}`)},
		{name: "required missing beside optional", route: "optional", in: jsonIn(`{"lines":[]}`), wantMissing: []string{"currency"}},
		{name: "whole body has no required fields", route: "whole", in: jsonIn(``)},
		{name: "ignore has no required fields", route: "ignore", in: jsonIn(`{}`)},
	}
	d := &Deriver{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := d.Derive(routeByName(t, api, tc.route), tc.in)
			if tc.wantMissing == nil {
				if err != nil {
					t.Fatalf("Derive() error = %v, want none", err)
				}
				return
			}
			var me *MissingFieldsError
			if !errors.As(err, &me) || !errors.Is(err, ErrMissingField) || !errors.Is(err, ErrInvalidBody) {
				t.Fatalf("Derive() error = %v, want a *MissingFieldsError wrapping ErrMissingField and ErrInvalidBody", err)
			}
			if got, want := strings.Join(me.Fields, ","), strings.Join(tc.wantMissing, ","); got != want || me.API != "payments" || me.Route != tc.route {
				t.Errorf("missing = %s/%s %s, want payments/%s %s", me.API, me.Route, got, tc.route, want)
			}
		})
	}
}

func TestMissingFieldsErrorMessage(t *testing.T) {
	tests := []struct {
		name string
		err  *MissingFieldsError
		want string
	}{
		{name: "one", err: &MissingFieldsError{API: "shop", Route: "order", Fields: []string{"item"}},
			want: `route shop/order: the body lacks required key field "item"`},
		{name: "several", err: &MissingFieldsError{API: "shop", Route: "order", Fields: []string{"client", "item"}},
			want: `route shop/order: the body lacks required key fields "client", "item"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Errorf("Error() = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestDeriveRefusesUnreadableBodies: whole-body keys (unmatched: guard's
// Fallback, ignore and no key section) have no required fields, so a body
// read the wrong way must be refused rather than keyed: before, curl -d's
// JSON became one empty form key, and x=%FF and x=%FE became one value.
func TestDeriveRefusesUnreadableBodies(t *testing.T) {
	api := mustParse(t, keyRules)
	routes := map[string]*Route{
		"fallback": Fallback("POST", "shop.example:443", "/v1/orders"),
		"ignore":   routeByName(t, api, "ignore"),
		"whole":    routeByName(t, api, "whole"),
	}
	tests := []struct {
		name, contentType, body, wantErr string
	}{
		{name: "json declared as a form", contentType: "application/x-www-form-urlencoded", body: `{"client":"a"}`, wantErr: "looks like JSON"},
		{name: "form that is not UTF-8", contentType: "application/x-www-form-urlencoded", body: "x=%FF", wantErr: "invalid UTF-8"},
		{name: "json that is not UTF-8", contentType: "application/json", body: "{\"x\":\"\xff\"}", wantErr: "invalid UTF-8"},
	}
	for _, tc := range tests {
		for name, r := range routes {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				_, err := (&Deriver{}).Derive(r, Input{ContentType: tc.contentType, Body: []byte(tc.body)})
				if !errors.Is(err, ErrInvalidBody) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("Derive() error = %v, want ErrInvalidBody containing %q", err, tc.wantErr)
				}
			})
		}
	}
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
