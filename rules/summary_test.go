package rules

import (
	"crypto/sha256"
	"encoding/hex"
	"reflect"
	"strings"
	"testing"
)

const summaryRules = `
api: shop
hosts: [shop.example.com]
credential: {header: Authorization}
routes:
  - name: pay
    match: POST /pay
    effect: irreversible
    key: {fields: [customer, amount, card, note]}
    redact: [card.number]
  - name: upload
    match: POST /files
    effect: irreversible
    key: {fields: [purpose, file]}
  - name: whole
    match: POST /whole
    effect: irreversible
    key: {ignore: [trace]}
`

func TestDeriveSummary(t *testing.T) {
	api := mustParse(t, summaryRules)
	long := strings.Repeat("é", 40) // 80 bytes
	fileSum := sha256.Sum256([]byte("%PDF-1"))
	tests := []struct {
		name  string
		route string
		in    Input
		want  []KeyField
	}{
		{
			name:  "fields with a redacted member, a long value and a missing optional one",
			route: "pay",
			in:    jsonIn(`{"customer":"cus_1","amount":500,"card":{"number":"4242424242424242","exp":"12/30"},"note":"` + long + `"}`),
			want: []KeyField{
				{Field: "customer", Value: `"cus_1"`},
				{Field: "amount", Value: `500`},
				{Field: "card", Value: `{"exp":"12/30","number":"[redacted]"}`},
				{Field: "note", Value: `"` + strings.Repeat("é", 30) + "…"},
			},
		},
		{
			name:  "multipart file part as its name and hash prefix",
			route: "upload",
			in:    multipartBody(t, part{name: "purpose", content: "evidence"}, part{name: "file", filename: "a.pdf", contentType: "application/pdf", content: "%PDF-1"}),
			want: []KeyField{
				{Field: "purpose", Value: `"evidence"`},
				{Field: "file", Value: `file "a.pdf" sha256:` + hex.EncodeToString(fileSum[:])[:12]},
			},
		},
		{
			name:  "a body keyed whole shows member names only",
			route: "whole",
			in:    jsonIn(`{"to":"acct_secret_value","amount":7,"trace":"t"}`),
			// trace is ignored by the key: not part of the intent, not shown.
			want: []KeyField{{Field: "amount"}, {Field: "to"}},
		},
	}
	for _, d := range []*Deriver{{Secret: []byte("s")}, {Secret: []byte("s"), Lean: true}} {
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				it, err := d.Derive(routeByName(t, api, tc.route), tc.in)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(it.Summary, tc.want) {
					t.Errorf("Summary =\n%q\nwant\n%q", it.Summary, tc.want)
				}
				for _, f := range it.Summary {
					if strings.Contains(f.Value, "4242") || strings.Contains(f.Value, "sk_1") || strings.Contains(f.Value, "acct_secret") {
						t.Errorf("summary shows a secret: %q", f)
					}
					if len(f.Value) > SummaryValueMax {
						t.Errorf("value %q longer than %d bytes", f.Value, SummaryValueMax)
					}
				}
			})
		}
	}
}

func TestSummaryCapped(t *testing.T) {
	var fields []string
	var body strings.Builder
	body.WriteString("{")
	for i := range 40 {
		name := "field_" + strings.Repeat("x", 10) + string(rune('a'+i%26)) + string(rune('a'+i/26))
		fields = append(fields, name)
		if i > 0 {
			body.WriteString(",")
		}
		body.WriteString(`"` + name + `":"` + strings.Repeat("v", 100) + `"`)
	}
	body.WriteString("}")
	got := summarizeFields(fields, []byte(body.String()))
	size := 0
	for _, f := range got {
		size += len(f.Field) + len(f.Value)
	}
	if size > SummaryMax {
		t.Errorf("summary is %d bytes, over %d", size, SummaryMax)
	}
	if last := got[len(got)-1]; last.Field != SummaryOmitted || len(got) >= 40 {
		t.Errorf("a capped summary ends with %q after %d fields, want %q", last.Field, len(got), SummaryOmitted)
	}
}

// A summary is its own memory: deriving another intent, which reuses the
// pooled buffers, leaves it as it was.
func TestSummaryOutlivesScratch(t *testing.T) {
	api := mustParse(t, summaryRules)
	d := &Deriver{Secret: []byte("s"), Lean: true}
	first, err := d.Derive(routeByName(t, api, "whole"), jsonIn(`{"alpha":1,"beta":2}`))
	if err != nil {
		t.Fatal(err)
	}
	pay, err := d.Derive(routeByName(t, api, "pay"), jsonIn(`{"customer":"cus_1","amount":5,"card":null,"note":"n"}`))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := d.Derive(routeByName(t, api, "pay"), jsonIn(`{"customer":"XXXXXXXXXXXXXXXX","amount":99999,"card":{},"note":"zzzzzzzz"}`)); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Derive(routeByName(t, api, "whole"), jsonIn(`{"gamma":1,"delta":2}`)); err != nil {
			t.Fatal(err)
		}
	}
	if want := []KeyField{{Field: "alpha"}, {Field: "beta"}}; !reflect.DeepEqual(first.Summary, want) {
		t.Errorf("first summary became %q, want %q", first.Summary, want)
	}
	if want := []KeyField{{Field: "customer", Value: `"cus_1"`}, {Field: "amount", Value: "5"}, {Field: "card", Value: "null"}, {Field: "note", Value: `"n"`}}; !reflect.DeepEqual(pay.Summary, want) {
		t.Errorf("pay summary became %q, want %q", pay.Summary, want)
	}
}
