package rules

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

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
