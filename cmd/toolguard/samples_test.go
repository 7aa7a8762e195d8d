package main

import (
	"strings"
	"testing"
)

// TestRulesCheckSamples checks rules check --sample: the shipped samples
// pass; a sample lacking required key fields is reported with every field
// it lacks, and a JSON body sent as a form (curl -d) is refused.
func TestRulesCheckSamples(t *testing.T) {
	cleanEnv(t)
	bad := "testdata/samples/missing.jsonl"
	tests := []struct {
		name      string
		sample    string
		wantCode  int
		goldenOut string
		goldenErr string
	}{
		{name: "shipped samples", sample: "../../examples/samples", wantCode: 0},
		{name: "one file, routes without samples noted", sample: "../../examples/samples/demo.jsonl", wantCode: 0, goldenOut: "rules_check_sample_gaps"},
		{name: "fields missing", sample: bad, wantCode: 1, goldenErr: "rules_check_sample_missing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := cli(t, "rules", "check", "../../examples/rules", "--sample", tc.sample)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tc.wantCode, stderr)
			}
			if tc.goldenOut != "" {
				golden(t, tc.goldenOut, stdout)
			}
			if tc.goldenErr != "" {
				golden(t, tc.goldenErr, stderr)
			}
		})
	}
}

// TestKeyExplainMissingField: key explain reads one rule file, and says
// which required key fields a body lacks instead of keying them as null.
func TestKeyExplainMissingField(t *testing.T) {
	cleanEnv(t)
	code, stdout, stderr := cli(t, "key", "explain", "--rules", "../../examples/rules/stripe.yaml", "--journal", "testdata/absent.db",
		"--url", "https://api.stripe.com/v1/payment_intents", "--header", "Content-Type: application/x-www-form-urlencoded",
		"--body", "amount=100&currency=eur&metadata.order_id=o1")
	want := "toolguard: route stripe/create_payment_intent: the body lacks required key field \"metadata[order_id]\"\n"
	if code != 1 || stdout != "" || stderr != want {
		t.Errorf("exit %d, stdout %q, stderr %q; want 1, nothing, %q", code, stdout, stderr, want)
	}
}

// TestRulesCheckRequestSide: rules check --sample keys multipart samples
// and GraphQL samples by the route their operation selects, and reports
// a query that no route guards.
func TestRulesCheckRequestSide(t *testing.T) {
	cleanEnv(t)
	code, stdout, stderr := cli(t, "rules", "check", "testdata/requestside/uploads.yaml", "--sample", "testdata/requestside/uploads.jsonl")
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, stderr)
	}
	golden(t, "rules_check_request_side", "--- stdout\n"+stdout+"--- stderr\n"+stderr)
}

// TestKeyExplainGraphQL: key explain keys a GraphQL request under the
// route its operation selects, and says when a query passes through.
func TestKeyExplainGraphQL(t *testing.T) {
	cleanEnv(t)
	explain := func(body string) (int, string, string) {
		return cli(t, "key", "explain", "--rules", "testdata/requestside/uploads.yaml", "--journal", "testdata/absent.db",
			"--url", "https://files.example.com/graphql", "--header", "Content-Type: application/json", "--body", body)
	}
	code, stdout, stderr := explain(`{"query":"mutation A($input: In!) { issueCreate(input: $input) { id } }","variables":{"input":{"title":"Bug"}}}`)
	if code != 0 || !strings.Contains(stdout, "route:     uploads/create_issue (POST /graphql, irreversible)") {
		t.Errorf("mutation: exit %d, stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	code, stdout, _ = explain(`{"query":"{ viewer { id } }"}`)
	if code != 0 || stdout != "no route selects this GraphQL query: the call passes through unguarded\n" {
		t.Errorf("query: exit %d, stdout %q", code, stdout)
	}
	code, _, stderr = explain(`{"query":"query A { a } mutation B { b }"}`)
	if code == 0 || !strings.Contains(stderr, "GraphQL query has 2 operations and no operationName says which to run") {
		t.Errorf("ambiguous: exit %d, stderr %q", code, stderr)
	}
}

// TestRulesCheckHeldSamples: rules check --sample lists the samples that
// would be held for an operator: by approval.when (true, or failing on the
// sample: fail closed) and beyond a caller's budget.
func TestRulesCheckHeldSamples(t *testing.T) {
	cleanEnv(t)
	code, stdout, stderr := cli(t, "rules", "check", "testdata/approval/payments.yaml", "--sample", "testdata/approval/payments.jsonl")
	if code != 0 {
		t.Fatalf("exit %d, want 0; stderr:\n%s", code, stderr)
	}
	golden(t, "rules_check_sample_held", stdout)
}
