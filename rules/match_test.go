package rules

import (
	"maps"
	"testing"
)

// The files of TestMatch pass unlisted writes through, so that a write no
// route matches is told apart (TestMatchUnlisted guards them).
const matchRules = `
api: shop
hosts: [shop.example.com, "*.shops.example.com", "127.0.0.1:9000", "[::1]:9000"]
unlisted: pass
routes:
  - {name: create_order, match: POST /v1/orders, effect: irreversible}
  - {name: refund, match: "POST /v1/orders/{order}/refunds", effect: irreversible}
  - {name: special_refund, match: POST /v1/orders/special/refunds, effect: irreversible}
  - {name: update_order, match: "PATCH /v1/orders/{order}", effect: reversible}
  - {name: upload, match: "PUT /files/{path...}", effect: reversible}
  - {name: upload_root, match: "PUT /files/{$}", effect: reversible}
  - {name: catch_all, match: "POST /v1/", effect: reversible}
  - {name: list, match: GET /v1/orders, effect: safe}
  - {name: escaped, match: "POST /v1/a%20b", effect: irreversible}
`

const mailRules = `
api: mail
hosts: [mail.example.com:8443, "*.example.com"]
unlisted: pass
routes:
  - {name: send, match: POST /send, effect: irreversible}
`

const mail2Rules = `
api: mail_eu
hosts: [mail.example.com, eu.shops.example.com]
unlisted: pass
routes:
  - {name: send_eu, match: POST /send, effect: irreversible}
`

func testSet(t testing.TB) *Set {
	t.Helper()
	set, err := NewSet(mustParse(t, matchRules), mustParse(t, mailRules), mustParse(t, mail2Rules))
	if err != nil {
		t.Fatalf("NewSet: %v", err)
	}
	return set
}

func TestMatch(t *testing.T) {
	set := testSet(t)
	tests := []struct {
		name               string
		host, method, path string
		wantRoute          string // "" = no match
		wantValues         map[string]string
	}{
		{name: "exact", host: "shop.example.com", method: "POST", path: "/v1/orders", wantRoute: "create_order"},
		{name: "any port", host: "shop.example.com:443", method: "POST", path: "/v1/orders", wantRoute: "create_order"},
		{name: "host case and trailing dot", host: "Shop.Example.COM.:443", method: "POST", path: "/v1/orders", wantRoute: "create_order"},
		{name: "wrong method", host: "shop.example.com", method: "PUT", path: "/v1/orders"},
		{name: "lowercase method", host: "shop.example.com", method: "post", path: "/v1/orders"},
		{name: "safe route matches", host: "shop.example.com", method: "GET", path: "/v1/orders", wantRoute: "list"},
		{name: "wildcard value", host: "shop.example.com", method: "POST", path: "/v1/orders/o_1/refunds", wantRoute: "refund", wantValues: map[string]string{"order": "o_1"}},
		{name: "escaped wildcard value", host: "shop.example.com", method: "POST", path: "/v1/orders/o%2F1/refunds", wantRoute: "refund", wantValues: map[string]string{"order": "o/1"}},
		{name: "literal beats wildcard", host: "shop.example.com", method: "POST", path: "/v1/orders/special/refunds", wantRoute: "special_refund"},
		{name: "trailing slash is a prefix", host: "shop.example.com", method: "POST", path: "/v1/anything/else", wantRoute: "catch_all"},
		{name: "trailing slash matches itself", host: "shop.example.com", method: "POST", path: "/v1/", wantRoute: "catch_all"},
		{name: "no trailing slash no match", host: "shop.example.com", method: "POST", path: "/v1"},
		{name: "exact path wins over prefix", host: "shop.example.com", method: "POST", path: "/v1/orders", wantRoute: "create_order"},
		{name: "extra segment", host: "shop.example.com", method: "PATCH", path: "/v1/orders/o_1/x"},
		{name: "trailing slash on exact", host: "shop.example.com", method: "PATCH", path: "/v1/orders/o_1/"},
		{name: "multi wildcard", host: "shop.example.com", method: "PUT", path: "/files/a/b/c.txt", wantRoute: "upload", wantValues: map[string]string{"path": "a/b/c.txt"}},
		{name: "end anchor", host: "shop.example.com", method: "PUT", path: "/files/", wantRoute: "upload_root"},
		{name: "multi needs a segment", host: "shop.example.com", method: "PUT", path: "/files"},
		{name: "escaped literal", host: "shop.example.com", method: "POST", path: "/v1/a%20b", wantRoute: "escaped"},
		{name: "empty path", host: "shop.example.com", method: "POST", path: ""},
		{name: "ip with port", host: "127.0.0.1:9000", method: "POST", path: "/v1/orders", wantRoute: "create_order"},
		{name: "ip other port", host: "127.0.0.1:9001", method: "POST", path: "/v1/orders"},
		{name: "ip without port", host: "127.0.0.1", method: "POST", path: "/v1/orders"},
		{name: "ipv6", host: "[::1]:9000", method: "POST", path: "/v1/orders", wantRoute: "create_order"},
		{name: "wildcard one label", host: "a.shops.example.com", method: "POST", path: "/v1/orders", wantRoute: "create_order"},
		{name: "wildcard two labels", host: "a.b.shops.example.com:8080", method: "POST", path: "/v1/orders", wantRoute: "create_order"},
		{name: "wildcard not the apex", host: "shops.example.com", method: "POST", path: "/send", wantRoute: "send"},
		{name: "exact beats wildcard", host: "eu.shops.example.com", method: "POST", path: "/send", wantRoute: "send_eu"},
		{name: "exact port beats any port", host: "mail.example.com:8443", method: "POST", path: "/send", wantRoute: "send"},
		{name: "any port beats wildcard", host: "mail.example.com:25", method: "POST", path: "/send", wantRoute: "send_eu"},
		{name: "longest wildcard wins", host: "x.shops.example.com", method: "POST", path: "/send"},
		{name: "unknown host", host: "example.org", method: "POST", path: "/v1/orders"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, vals := set.Match(tc.host, tc.method, tc.path)
			got := ""
			if r != nil {
				got = r.Name
			}
			if got != tc.wantRoute {
				t.Fatalf("Match(%q, %q, %q) = %q, want %q", tc.host, tc.method, tc.path, got, tc.wantRoute)
			}
			if !maps.Equal(vals, tc.wantValues) {
				t.Errorf("path values = %v, want %v", vals, tc.wantValues)
			}
		})
	}
}

func TestIntercepts(t *testing.T) {
	set := testSet(t)
	tests := []struct {
		hostport string
		want     bool
	}{
		{"shop.example.com:443", true},
		{"a.shops.example.com:443", true},
		{"mail.example.com:8443", true},
		{"deep.sub.example.com:443", true},
		{"example.com:443", false},
		{"127.0.0.1:9000", true},
		{"127.0.0.1:443", false},
		{"example.org:443", false},
	}
	for _, tc := range tests {
		t.Run(tc.hostport, func(t *testing.T) {
			if got := set.Intercepts(tc.hostport); got != tc.want {
				t.Errorf("Intercepts(%q) = %v, want %v", tc.hostport, got, tc.want)
			}
		})
	}
	var zero Set
	if zero.Intercepts("shop.example.com") {
		t.Errorf("zero Set intercepts")
	}
	if r, _ := (*Set)(nil).Match("shop.example.com", "POST", "/"); r != nil {
		t.Errorf("nil Set matched %v", r.Name)
	}
}

func BenchmarkMatch(b *testing.B) {
	set := testSet(b)
	b.ReportAllocs()
	for b.Loop() {
		if r, _ := set.Match("shop.example.com:443", "POST", "/v1/orders/special/refunds"); r == nil {
			b.Fatal("no match")
		}
		if r, _ := set.Match("a.b.shops.example.com:443", "POST", "/v1/orders"); r == nil {
			b.Fatal("no match")
		}
	}
}
