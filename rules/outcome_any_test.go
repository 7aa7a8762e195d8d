package rules

import (
	"strings"
	"testing"
)

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
