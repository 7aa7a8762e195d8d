package rules

import "testing"

// Every spelling of a route's path that the provider's server takes for
// it is matched as that route.
func TestMatchCleansThePath(t *testing.T) {
	api := mustParse(t, `
api: billing
hosts: [api.example.com]
credential: {header: Authorization}
routes:
  - name: create_invoice
    match: POST /v1/invoices
    effect: irreversible
  - name: pay
    match: POST /v1/invoices/{id}/pay
    effect: irreversible
`)
	set, err := NewSet(api)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, route, id string }{
		{"/v1/invoices", "create_invoice", ""},
		{"//v1/invoices", "create_invoice", ""},
		{"/v1//invoices", "create_invoice", ""},
		{"/./v1/invoices", "create_invoice", ""},
		{"/x/../v1/invoices", "create_invoice", ""},
		{"/v1/%2e/invoices", "create_invoice", ""},
		{"/v1/x/%2E%2E/invoices", "create_invoice", ""},
		{"/v1/invoices/in_1//pay", "pay", "in_1"},
		{"/v1/invoices/in%2F1/pay", "pay", "in/1"},
	} {
		r, vals := set.Match("api.example.com", "POST", tc.path)
		if r == nil || r.Name != tc.route || vals["id"] != tc.id {
			name := "<nil>"
			if r != nil {
				name = r.Name
			}
			t.Errorf("%s matched %s %v, want %s id=%q", tc.path, name, vals, tc.route, tc.id)
		}
	}
}

func FuzzCleanPath(f *testing.F) {
	for _, s := range []string{"/", "//a", "/a/./b/../c/", "/%2e%2E/x", "a/b", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		c := CleanPath(p)
		if c == "" || c[0] != '/' || CleanPath(c) != c {
			t.Fatalf("CleanPath(%q) = %q: not a clean, idempotent path", p, c)
		}
	})
}
