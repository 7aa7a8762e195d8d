package rules

import (
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
)

// approvalRoute parses a one-route file whose route has approval: {when}.
func approvalRoute(t *testing.T, when string) *Route {
	t.Helper()
	api, err := Parse("a.yaml", []byte(`api: payments
hosts: [pay.example]
credential: {header: X-Api-Key}
routes:
  - name: pay
    match: POST /v1/accounts/{account}/payments
    effect: irreversible
    approval: {when: '`+strings.ReplaceAll(when, "'", "''")+`'}
`))
	if err != nil {
		t.Fatal(err)
	}
	return api.Routes[0]
}

func TestNeedsApproval(t *testing.T) {
	const jsonType = "application/json"
	tests := []struct {
		name        string
		when        string
		contentType string
		body        string
		query       string
		header      http.Header
		want        bool
		wantErr     bool
	}{
		{name: "above the threshold", when: `int(body.amount) > 10000 && body.currency == "eur"`,
			contentType: jsonType, body: `{"amount": 20000, "currency": "eur"}`, want: true},
		{name: "below the threshold", when: `int(body.amount) > 10000 && body.currency == "eur"`,
			contentType: jsonType, body: `{"amount": 9999, "currency": "eur"}`},
		{name: "other currency", when: `int(body.amount) > 10000 && body.currency == "eur"`,
			contentType: jsonType, body: `{"amount": 20000, "currency": "usd"}`},
		{name: "a double compares with an int", when: `body.amount > 10000`,
			contentType: jsonType, body: `{"amount": 10000.5}`, want: true},
		{name: "a missing field holds (fail closed)", when: `int(body.amount) > 10000`,
			contentType: jsonType, body: `{"currency": "eur"}`, want: true, wantErr: true},
		{name: "has() tells a missing field", when: `has(body.amount) && int(body.amount) > 10000`,
			contentType: jsonType, body: `{"currency": "eur"}`},
		{name: "an int conversion that overflows holds", when: `int(body.amount) > 0`,
			contentType: jsonType, body: `{"amount": 1e30}`, want: true, wantErr: true},
		{name: "lists and macros", when: `body.lines.exists(l, l.qty > 5)`,
			contentType: jsonType, body: `{"lines": [{"qty": 1}, {"qty": 9}]}`, want: true},
		{name: "form body: strings", when: `int(body.amount) >= 500`,
			contentType: "application/x-www-form-urlencoded", body: `amount=500&currency=eur`, want: true},
		{name: "form body: a repeated field is a list", when: `size(body.tag) == 2 && body.tag[1] == "b"`,
			contentType: "application/x-www-form-urlencoded", body: `tag=a&tag=b`, want: true},
		{name: "empty body is null", when: `body == null`, want: true},
		{name: "query", when: `query.dry_run == "false" && size(query.tag) == 2`,
			query: "dry_run=false&tag=x&tag=y", want: true},
		{name: "path values", when: `path.account == "acct_1"`, contentType: jsonType, body: `{}`, want: true},
		{name: "headers by lower-case name, first value", when: `headers["x-tenant"] == "big"`,
			header: http.Header{"X-Tenant": {"big", "small"}}, want: true},
		{name: "the credential header is left out", when: `"x-api-key" in headers || "authorization" in headers || "cookie" in headers`,
			header: http.Header{"X-Api-Key": {"sk_1"}, "Authorization": {"Bearer t"}, "Cookie": {"s=1"}}},
		{name: "cost limit", when: `body.n.all(a, body.n.all(b, body.n.all(c, a + b + c >= 0)))`,
			contentType: jsonType, body: `{"n": [` + strings.Repeat("1,", 99) + `1]}`, want: true, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := approvalRoute(t, tc.when)
			in := Input{ContentType: tc.contentType, Body: []byte(tc.body), RawQuery: tc.query,
				PathValues: map[string]string{"account": "acct_1"}, Credential: "sk_1"}
			it, err := (&Deriver{Lean: true}).Derive(r, in)
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.NeedsApproval(it.Doc, in, tc.header)
			if got != tc.want || (err != nil) != tc.wantErr {
				t.Fatalf("NeedsApproval() = %v, %v; want %v, error %v", got, err, tc.want, tc.wantErr)
			}
			if err != nil && !errors.Is(err, ErrCondition) {
				t.Errorf("error %v does not wrap ErrCondition", err)
			}
		})
	}
}

// TestNeedsApprovalRequired: approval: required holds every intent, and
// a route without approval none, without evaluating anything.
func TestNeedsApprovalRequired(t *testing.T) {
	for _, tc := range []struct {
		approval string
		want     bool
	}{{"required", true}, {"none", false}} {
		api, err := Parse("a.yaml", []byte("api: a\nhosts: [a.example]\nroutes:\n  - name: r\n    match: POST /r\n    effect: irreversible\n    approval: "+tc.approval+"\n"))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := api.Routes[0].NeedsApproval(nil, Input{}, nil); got != tc.want || err != nil {
			t.Errorf("approval: %s: NeedsApproval() = %v, %v; want %v", tc.approval, got, err, tc.want)
		}
	}
}

// TestApprovalOnTools: MCP tools take approval: {when} and budget: over
// their arguments, like routes; a safe tool takes neither.
func TestApprovalOnTools(t *testing.T) {
	_, err := Parse("t.yaml", []byte(`api: tickets
mcp: {}
tools:
  - name: refund
    effect: irreversible
    approval: {when: 'double(amount) > 1.0'}
  - name: search
    effect: safe
    budget: {calls: 1, per: 1m}
`))
	var es *Errors
	if !errors.As(err, &es) {
		t.Fatalf("Parse() = %v, want *Errors", err)
	}
	want := "t.yaml:6:30: approval.when: undeclared reference to 'amount'\n" +
		"t.yaml:9:5: budget: a safe tool passes through unguarded; a budget would never apply"
	if err.Error() != want {
		t.Errorf("errors:\n%s\nwant:\n%s", err, want)
	}
	api, err := Parse("t.yaml", []byte(`api: tickets
mcp: {}
tools:
  - name: refund
    effect: irreversible
    key: {fields: [order]}
    approval: {when: 'body.amount > 100'}
    budget: {calls: 3, per: 1h}
`))
	if err != nil {
		t.Fatal(err)
	}
	r := api.Tool("refund")
	in := Input{ContentType: "application/json", Body: []byte(`{"order":"o1","amount":250}`)}
	it, err := (&Deriver{Lean: true}).Derive(r, in)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := r.NeedsApproval(it.Doc, in, nil); !got || err != nil {
		t.Errorf("NeedsApproval() = %v, %v; want true", got, err)
	}
	if b := r.Budget; b == nil || b.Calls != 3 || b.Per.Hours() != 1 {
		t.Errorf("budget = %+v, want 3 per 1h", b)
	}
}

// TestParseApproval parses approval: {when} and budget: on routes, the
// expression written inline, quoted, or as a block.
func TestParseApproval(t *testing.T) {
	const file = "testdata/approval/good.yaml"
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	api, err := Parse(file, data)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "testdata/approval/good.golden", dumpAPI(api))
}
