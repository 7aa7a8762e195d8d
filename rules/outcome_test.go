package rules

import (
	"strings"
	"testing"
)

// dumpResponseRules prints a route's response-side rules for the golden
// files; it prints nothing for a route without them, so older golden
// files stay as they were.
func dumpResponseRules(p func(string, ...any), r *Route) {
	if ni := r.NativeIdempotency; ni != nil && ni.TTL > 0 {
		p("  native_idempotency ttl %s", ni.TTL)
	}
	if l := r.Lookup; l != nil {
		if a := l.Answer; a != nil {
			p("  lookup answer body=%q status=%d", a.Body, a.Status)
		}
		if l.Settle > 0 {
			p("  lookup settle %s", l.Settle)
		}
		if l.Rate != nil {
			p("  lookup rate %s", l.Rate)
		}
		if n := l.Next; n != nil {
			p("  lookup next cursor=%q param=%q has_more=%q pages=%d", n.Cursor, n.Param, n.HasMore, n.Pages)
		}
	}
	if v := r.Verify; v != nil && v.Before != nil {
		p("  verify before %s %s expect %s", v.Before.Request.Method, v.Before.Request.URL, dumpExpectation(&v.Before.Expect))
	}
	if o := r.Outcome; o != nil {
		for _, x := range []struct {
			name string
			e    *Expectation
		}{{"failure", o.Failure}, {"retryable", o.Retryable}, {"accepted", o.Accepted}, {"already_done", o.AlreadyDone}} {
			if x.e != nil {
				p("  outcome %s %s present=%q", x.name, dumpExpectation(x.e), x.e.Present)
			}
		}
	}
}

func TestClassify(t *testing.T) {
	o := &Outcome{
		Failure:     &Expectation{Body: []BodyMatch{{Path: "ok", Value: "false"}}},
		Retryable:   &Expectation{Body: []BodyMatch{{Path: "errors.0.extensions.code", Value: "THROTTLED"}}},
		Accepted:    &Expectation{Status: []int{202}},
		AlreadyDone: &Expectation{Status: []int{404, 409, 410, 412}},
	}
	gql := &Outcome{Failure: &Expectation{Present: []string{"errors.0"}}}
	tests := []struct {
		name   string
		o      *Outcome
		status int
		body   string
		want   OutcomeKind
	}{
		{name: "nil outcome", o: nil, status: 200, body: `{"ok":false}`, want: OutcomeByStatus},
		{name: "slack ok false", o: o, status: 200, body: `{"ok":false,"error":"channel_not_found"}`, want: OutcomeFailure},
		{name: "slack ok true", o: o, status: 200, body: `{"ok":true,"ts":"1.2"}`, want: OutcomeByStatus},
		{name: "throttled before failure", o: o, status: 200, body: `{"ok":false,"errors":[{"extensions":{"code":"THROTTLED"}}]}`, want: OutcomeRetryable},
		{name: "accepted", o: o, status: 202, body: `{}`, want: OutcomeAccepted},
		{name: "gone on delete", o: o, status: 404, body: `not json`, want: OutcomeAlreadyDone},
		{name: "5xx stays ambiguous", o: &Outcome{Failure: &Expectation{Contains: "x"}}, status: 503, body: `x`, want: OutcomeByStatus},
		{name: "graphql errors", o: gql, status: 200, body: `{"data":null,"errors":[{"message":"no"}]}`, want: OutcomeFailure},
		{name: "graphql empty errors", o: gql, status: 200, body: `{"data":{},"errors":[]}`, want: OutcomeByStatus},
		{name: "graphql no errors", o: gql, status: 200, body: `{"data":{}}`, want: OutcomeByStatus},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.o.Classify(tc.status, []byte(tc.body)); got != tc.want {
				t.Fatalf("Classify(%d, %s) = %s, want %s", tc.status, tc.body, got, tc.want)
			}
		})
	}
}

// A GraphQL mutation fails in two shapes: a top-level "errors" list, or
// its own data.<field>.userErrors with HTTP 200. One expectation requires
// all its paths, so an outcome rule may be a list of which any matches.
func TestOutcomeRuleList(t *testing.T) {
	api, err := Parse("shop.yaml", []byte(`
api: shop
hosts: [shop.example.com]
routes:
  - name: product_create
    match: POST /graphql.json
    graphql: {field: productCreate}
    effect: irreversible
    key: {fields: [variables]}
    outcome:
      retryable: {body: {"errors.0.extensions.code": THROTTLED}}
      failure:
        - present: ["errors.0"]
        - present: ["data.productCreate.userErrors.0"]
`))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	o := api.Routes[0].Outcome
	for _, tc := range []struct {
		name, body string
		want       OutcomeKind
	}{
		{name: "top-level errors", body: `{"errors":[{"message":"Access denied"}]}`, want: OutcomeFailure},
		{name: "user errors", body: `{"data":{"productCreate":{"product":null,"userErrors":[{"field":["title"],"message":"Title can't be blank"}]}}}`, want: OutcomeFailure},
		{name: "throttled is retryable", body: `{"errors":[{"message":"Throttled","extensions":{"code":"THROTTLED"}}]}`, want: OutcomeRetryable},
		{name: "created", body: `{"data":{"productCreate":{"product":{"id":"gid://shopify/Product/1"},"userErrors":[]}}}`, want: OutcomeByStatus},
	} {
		if got := o.Classify(200, []byte(tc.body)); got != tc.want {
			t.Errorf("%s: Classify = %s, want %s", tc.name, got, tc.want)
		}
	}
	for _, tc := range []struct{ name, rule, want string }{
		{name: "empty list", rule: "failure: []", want: "outcome.failure: empty list"},
		{name: "5xx in an item", rule: "failure: [{status: 200}, {status: 503}]", want: "outcome.failure[1].status: 503 is a 5xx answer"},
		{name: "bad item", rule: "failure: [{stat: 200}]", want: "outcome.failure[0]"},
	} {
		_, err := Parse("shop.yaml", []byte(`
api: shop
hosts: [shop.example.com]
routes:
  - name: create
    match: POST /things
    effect: irreversible
    outcome:
      `+tc.rule+`
`))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Parse error = %v, want %q", tc.name, err, tc.want)
		}
	}
}
