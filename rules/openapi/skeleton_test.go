package openapi

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/rules"
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
		t.Fatalf("%v (run go test ./rules/openapi -run %s -update to create it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s differs (go test -update rewrites it)\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

// TestSkeletonGolden generates the rule file of every testdata
// document (stripe.json is a trimmed copy of Stripe's published spec) and
// compares it with its golden file; each must load as a rule file, come
// out the same twice, and have a route (or a commented-out one) for every
// write operation.
func TestSkeletonGolden(t *testing.T) {
	tests := []struct {
		name   string
		spec   string
		api    string
		routes int // routes that load
		off    int // routes commented out
	}{
		{name: "stripe", spec: "stripe.json", api: "stripe", routes: 10},
		{name: "edge", spec: "edge.yaml", routes: 9, off: 1},
		{name: "minimal", spec: "minimal.json", routes: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join("testdata", tc.spec)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			opts := SkeletonOptions{API: tc.api, Source: tc.spec, Location: path}
			got, err := Skeleton(data, opts)
			if err != nil {
				t.Fatal(err)
			}
			again, err := Skeleton(data, opts)
			if err != nil || string(again) != string(got) {
				t.Errorf("a second run gave other output (err %v)", err)
			}
			golden(t, filepath.Join("testdata", tc.name+".golden"), string(got))
			api, err := rules.Parse(tc.name+".yaml", got)
			if err != nil {
				t.Fatalf("the skeleton does not load: %v", err)
			}
			if _, err := rules.NewSet(api); err != nil {
				t.Fatalf("the skeleton does not make a set: %v", err)
			}
			if len(api.Routes) != tc.routes {
				t.Errorf("%d routes, want %d", len(api.Routes), tc.routes)
			}
			if n := strings.Count(string(got), "this route is commented out"); n != tc.off {
				t.Errorf("%d routes commented out, want %d", n, tc.off)
			}
		})
	}
}

// The routes come sorted by the document's path, then method.
func TestSkeletonSorted(t *testing.T) {
	data, err := os.ReadFile("testdata/stripe.json")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Skeleton(data, SkeletonOptions{})
	if err != nil {
		t.Fatal(err)
	}
	api, err := rules.Parse("stripe.yaml", got)
	if err != nil {
		t.Fatal(err)
	}
	var seq []string
	for _, r := range api.Routes {
		seq = append(seq, r.Pattern+" "+r.Method)
	}
	if !slices.IsSorted(seq) {
		t.Errorf("routes not sorted by path then method:\n%s", strings.Join(seq, "\n"))
	}
	if api.Name != "stripe-api" || api.Credential != "Authorization" || !slices.Equal(api.Hosts, []string{"api.stripe.com"}) {
		t.Errorf("api %q, credential %q, hosts %v", api.Name, api.Credential, api.Hosts)
	}
}

func TestSkeletonErrors(t *testing.T) {
	tests := []struct {
		name, spec, api, want string
		is                    error
	}{
		{name: "no write operations", spec: `{"openapi":"3.0.0","info":{"title":"t","version":"1"},"paths":{"/a":{"get":{"responses":{"200":{"description":"ok"}}}}}}`,
			want: "no POST, PUT, PATCH or DELETE operations", is: ErrNoWriteOperations},
		{name: "no paths", spec: "openapi: 3.1.0\ninfo: {title: t, version: '1'}\n", is: ErrNoWriteOperations},
		{name: "swagger 2", spec: `{"swagger":"2.0","info":{"title":"t","version":"1"},"paths":{}}`, want: "want OpenAPI 3.0 or 3.1"},
		{name: "not a document", spec: "[1, 2", want: "load OpenAPI document"},
		{name: "bad api name", spec: "openapi: 3.0.0\ninfo: {title: t, version: '1'}\npaths: {/a: {post: {responses: {'200': {description: ok}}}}}\n",
			api: "Bad Name", want: `--api "Bad Name"`},
		{name: "unresolvable ref", spec: "openapi: 3.0.0\ninfo: {title: t, version: '1'}\npaths: {/a: {post: {requestBody: {$ref: '#/components/requestBodies/Nope'}, responses: {'200': {description: ok}}}}}\n",
			want: "Nope"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Skeleton([]byte(tc.spec), SkeletonOptions{API: tc.api})
			if err == nil {
				t.Fatal("no error")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v is not %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q lacks %q", err, tc.want)
			}
		})
	}
}

// A $ref to a remote document is never fetched.
func TestSkeletonNoRemoteRefs(t *testing.T) {
	spec := "openapi: 3.0.0\ninfo: {title: t, version: '1'}\npaths: {/a: {post: {requestBody: {$ref: 'http://127.0.0.1:1/x.yaml#/B'}, responses: {'200': {description: ok}}}}}\n"
	_, err := Skeleton([]byte(spec), SkeletonOptions{Location: filepath.Join(t.TempDir(), "spec.yaml")})
	if err == nil || !strings.Contains(err.Error(), "only local files") {
		t.Errorf("err = %v, want a refusal of the remote $ref", err)
	}
}

// The edge-case document's routes carry the key fields and native
// idempotency the generator proposes, as the rules package reads them.
func TestSkeletonEdgeRoutes(t *testing.T) {
	data, err := os.ReadFile("testdata/edge.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, err := Skeleton(data, SkeletonOptions{API: "edge"})
	if err != nil {
		t.Fatal(err)
	}
	api, err := rules.Parse("edge.yaml", out)
	if err != nil {
		t.Fatal(err)
	}
	routes := map[string]*rules.Route{}
	for _, r := range api.Routes {
		routes[r.Name] = r
	}
	tests := []struct {
		route, header, body string
		fields              []string
	}{
		// allOf merged, a dotted name escaped, a path-level header parameter
		{route: "orders_create", header: "Idempotency-Key", fields: []string{"amount", "currency", "customer", `ship\.to`, "shipping.address.country"}},
		// a form: a required deep object as a form path; the array left to a TODO
		{route: "createPayment", body: "idempotency_key", fields: []string{"amount", "metadata[order_id]"}},
		// a $ref cycle stops at the recursive property
		{route: "createTree", fields: []string{"name", "parent"}},
		// a +json body; its idempotency field is never a key field
		{route: "postDir", body: "client_token"},
		// oneOf: the whole body
		{route: "putShape"},
		// DELETE: keyed on its path; a header described as an idempotency key
		{route: "orders_create_2", header: "X-Request-Token"},
	}
	for _, tc := range tests {
		t.Run(tc.route, func(t *testing.T) {
			r := routes[tc.route]
			if r == nil {
				t.Fatalf("no route %q", tc.route)
			}
			if !slices.Equal(r.Key.Fields, tc.fields) {
				t.Errorf("key.fields %q, want %q", r.Key.Fields, tc.fields)
			}
			var h, b string
			if r.NativeIdempotency != nil {
				h, b = r.NativeIdempotency.Header, r.NativeIdempotency.Body
			}
			if h != tc.header || b != tc.body {
				t.Errorf("native_idempotency header %q body %q, want %q %q", h, b, tc.header, tc.body)
			}
			if r.Effect != rules.EffectIrreversible {
				t.Errorf("effect %v, want irreversible", r.Effect)
			}
		})
	}
}

// The key paths the generator proposes select the fields of real request
// bodies: a form's nested name, a JSON object's deep field, an escaped
// dotted name. A fresh idempotency key per call leaves the key as it is.
func TestSkeletonKeysDerive(t *testing.T) {
	data, err := os.ReadFile("testdata/edge.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, err := Skeleton(data, SkeletonOptions{API: "edge"})
	if err != nil {
		t.Fatal(err)
	}
	api, err := rules.Parse("edge.yaml", out)
	if err != nil {
		t.Fatal(err)
	}
	set, err := rules.NewSet(api)
	if err != nil {
		t.Fatal(err)
	}
	const form = "application/x-www-form-urlencoded"
	tests := []struct {
		name, route, ctype, body, sameAs, differs, fails string
	}{
		{name: "form", route: "/v2/payments", ctype: form, body: "amount=100&metadata[order_id]=o1&items[0]=a&idempotency_key=k1"},
		{name: "form retry", route: "/v2/payments", ctype: form, body: "idempotency_key=k2&items[0]=a&metadata[order_id]=o1&amount=100", sameAs: "form"},
		{name: "form other order", route: "/v2/payments", ctype: form, body: "amount=100&metadata[order_id]=o2&items[0]=a&idempotency_key=k1", differs: "form"},
		{name: "form without order", route: "/v2/payments", ctype: form, body: "amount=100&items[0]=a", fails: "metadata[order_id]"},
		{name: "json", route: "/v2/orders", ctype: "application/json",
			body: `{"amount":1,"currency":"eur","customer":"c1","ship.to":"x","shipping":{"address":{"country":"FR","line1":"a"}},"note":"n"}`},
		{name: "json other line1", route: "/v2/orders", ctype: "application/json",
			body: `{"amount":1,"currency":"eur","customer":"c1","ship.to":"x","shipping":{"address":{"country":"FR","line1":"b"}}}`, sameAs: "json"},
		{name: "json other country", route: "/v2/orders", ctype: "application/json",
			body: `{"amount":1,"currency":"eur","customer":"c1","ship.to":"x","shipping":{"address":{"country":"DE"}}}`, differs: "json"},
		{name: "whole body", route: "/v2/dir/", ctype: "application/merge-patch+json", body: `{"title":"t","client_token":"a"}`},
		{name: "whole body, fresh token", route: "/v2/dir/", ctype: "application/merge-patch+json", body: `{"client_token":"b","title":"t"}`, sameAs: "whole body"},
		{name: "whole body, other title", route: "/v2/dir/", ctype: "application/merge-patch+json", body: `{"client_token":"a","title":"u"}`, differs: "whole body"},
		{name: "json without ship.to", route: "/v2/orders", ctype: "application/json",
			body: `{"amount":1,"currency":"eur","customer":"c1","shipping":{"address":{"country":"DE"}}}`, fails: `"ship\\.to"`},
	}
	keys := map[string]string{}
	d := &rules.Deriver{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, vals := set.Match("eu.api.example.com", "POST", tc.route)
			if r == nil {
				t.Fatalf("no route matches POST %s", tc.route)
			}
			in, err := d.Derive(r, rules.Input{ContentType: tc.ctype, Body: []byte(tc.body), PathValues: vals})
			if tc.fails != "" {
				if err == nil || !strings.Contains(err.Error(), tc.fails) {
					t.Fatalf("err = %v, want one naming %s", err, tc.fails)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			keys[tc.name] = in.Key
			if tc.sameAs != "" && in.Key != keys[tc.sameAs] {
				t.Errorf("key differs from %q's", tc.sameAs)
			}
			if tc.differs != "" && in.Key == keys[tc.differs] {
				t.Errorf("key equals %q's", tc.differs)
			}
		})
	}
}
