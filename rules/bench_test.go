package rules

import (
	"fmt"
	"strings"
	"testing"
)

// invoiceBody is a ~1 KiB JSON request body.
func invoiceBody() []byte {
	var lines []string
	for i := range 6 {
		lines = append(lines, fmt.Sprintf(`{"description":"Consulting hours, week %d","quantity":%d,"unit_amount":12500,"tax_rates":["txr_1NqWe2"],"trace":"span-%04d"}`, i, i+1, i))
	}
	return []byte(`{"customer":"cus_9s6XKzkNRiz8i3","currency":"eur","collection_method":"send_invoice","days_until_due":30,` +
		`"metadata":{"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","agent":"billing-bot","prompt_version":"v12"},` +
		`"description":"Monthly services \u2014 October","lines":[` + strings.Join(lines, ",") + `],"auto_advance":true}`)
}

const benchRules = `
api: payments
hosts: [payments.example.com]
credential: {header: Authorization}
routes:
  - name: create_invoice
    match: POST /v1/customers/{customer}/invoices
    effect: irreversible
    key: {fields: [customer, currency, lines, days_until_due]}
  - name: create_invoice_ignore
    match: POST /v2/invoices
    effect: irreversible
    key: {ignore: [metadata.trace_id, "lines.#.trace"]}
`

func BenchmarkDerive(b *testing.B) {
	api := mustParse(b, benchRules)
	body := invoiceBody()
	d := &Deriver{Secret: []byte("0123456789abcdef0123456789abcdef")}
	in := Input{
		ContentType: "application/json",
		Body:        body,
		RawQuery:    "expand=lines",
		PathValues:  map[string]string{"customer": "cus_9s6XKzkNRiz8i3"},
		Credential:  "Bearer sk_live_4eC39HqLyjWDarjtT1zdp7dc",
		Workflow:    "wf-2024-10-31-billing",
	}
	for _, bc := range []struct{ name, route string }{
		{name: "fields", route: "create_invoice"},
		{name: "ignore", route: "create_invoice_ignore"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := routeByName(b, api, bc.route)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := d.Derive(r, in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkCanonicalJSON(b *testing.B) {
	body := invoiceBody()
	dst := make([]byte, 0, 2*len(body))
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if dst, err = CanonicalJSON(dst[:0], body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDeriveMultipart keys an upload of a 1 MiB file: the part is
// hashed as it is read, so allocations stay flat in the file's size.
func BenchmarkDeriveMultipart(b *testing.B) {
	r := routeNamed(b, mustParse(b, requestSideRules), "upload")
	in := multipartBody(b, part{name: "purpose", content: "dispute_evidence"},
		part{name: "file", filename: "a.pdf", contentType: "application/pdf", content: strings.Repeat("x", 1<<20)})
	d := &Deriver{Lean: true}
	b.SetBytes(int64(len(in.Body)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := d.Derive(r, in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSelectGraphQL picks the route of a typical mutation.
func BenchmarkSelectGraphQL(b *testing.B) {
	set, err := NewSet(mustParse(b, requestSideRules))
	if err != nil {
		b.Fatal(err)
	}
	first, _ := set.Match("api.example.com", "POST", "/graphql")
	body := []byte(`{"query":"mutation IssueCreate($input: IssueCreateInput!) { issueCreate(input: $input) { success issue { id identifier url } } }","variables":{"input":{"title":"Bug","teamId":"t1","description":"a long description"}}}`)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if r, _, err := SelectGraphQL(first, body); err != nil || r == nil {
			b.Fatal(r, err)
		}
	}
}
