package samples

import (
	"os"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/rules"
)

const sampleRules = `api: shop
hosts: [shop.example]
credential: {header: Authorization}
routes:
  - name: order
    match: POST /v1/orders
    effect: irreversible
    key:
      fields: [client, item, note]
      optional: [note]
  - name: cancel
    match: DELETE /v1/orders/{id}
    effect: irreversible
unlisted: pass
`

func TestCheckSamples(t *testing.T) {
	set, err := rules.NewSet(mustParse(t, sampleRules))
	if err != nil {
		t.Fatal(err)
	}
	const order = `"method":"POST","url":"https://shop.example/v1/orders","content_type":"application/json"`
	tests := []struct {
		name  string
		lines []string
		want  []string // problems, each without the "s.jsonl:" prefix
	}{
		{name: "good pairs", lines: []string{
			`{"name":"a",` + order + `,"body":{"client":"c","item":"i","note":"n","trace":1}}`,
			`{"same_key_as":"a",` + order + `,"body":{"item":"i","client":"c","note":"n","trace":2}}`,
			`{"key_differs_from":"a",` + order + `,"body":{"client":"c","item":"j","note":"n"}}`,
		}},
		{name: "every missing field of every sample", lines: []string{
			`{` + order + `,"body":{"client":"c","note":"n"}}`,
			`{` + order + `,"body":{}}`,
		}, want: []string{
			`1: route shop/order: the body lacks required key field "item"`,
			`2: route shop/order: the body lacks required key fields "client", "item"`,
		}},
		{name: "curl -d: JSON declared as a form", lines: []string{
			`{"method":"POST","url":"https://shop.example/v1/orders","content_type":"application/x-www-form-urlencoded","body":"{\"client\":\"a\",\"item\":\"z\"}"}`,
		}, want: []string{
			`1: route shop/order: invalid body: the body is declared application/x-www-form-urlencoded but looks like JSON (curl -d sends that content type: send Content-Type: application/json)`,
		}},
		{name: "optional field in no sample", lines: []string{
			`{` + order + `,"body":{"client":"c","item":"i","nte":"n"}}`,
		}, want: []string{
			`test.yaml:5:11: key.optional: "note" is in none of the 1 sample bodies of route order: a typo, or a path into another shape of body?`,
		}},
		{name: "broken pairs", lines: []string{
			`{"name":"a",` + order + `,"body":{"client":"c","item":"i","note":"n"}}`,
			`{"same_key_as":"a",` + order + `,"body":{"client":"c","item":"i","note":"changed"}}`,
			`{"key_differs_from":"a",` + order + `,"body":{"client":"c","item":"i","note":"n","extra":1}}`,
			`{"same_key_as":"nobody",` + order + `,"body":{"client":"c","item":"i","note":"n"}}`,
			`{"same_key_as":"a","method":"DELETE","url":"https://shop.example/v1/orders/1"}`,
			`{"method":"POST","url":"https://shop.example/v2/unknown"}`,
			`{"same_key_as":"a",` + order + `,"body":{"client":"c","item":"i","note":"n"}}`,
		}, want: []string{
			`2: key differs from sample "a"'s, but same_key_as says they are one intent (is a field that should be ignored part of the key?)`,
			`3: key equals sample "a"'s, but key_differs_from says they are different intents (is a key field missing from the rule?)`,
			`4: same_key_as: no sample is named "nobody"`,
			`5: same_key_as: sample "a" is of route shop/order, this one of shop/cancel`,
			`6: no route matches POST https://shop.example/v2/unknown`,
			`7: same_key_as: the request is identical to sample "a"'s; a pair must differ (in an ignored field, or a key field)`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			samples, err := Read("s.jsonl", strings.NewReader(strings.Join(tc.lines, "\n")))
			if err != nil {
				t.Fatal(err)
			}
			rep := Check(set, samples, &rules.Deriver{})
			var got []string
			for _, p := range rep.Problems {
				got = append(got, strings.TrimPrefix(p, "s.jsonl:"))
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestReadSamplesErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{name: "unknown member", in: `{"method":"POST","url":"https://a.example/","bdy":{}}`, want: `s.jsonl:1: json: unknown field "bdy"`},
		{name: "relative url", in: "\n" + `{"method":"POST","url":"/v1/x"}`, want: `s.jsonl:2: url must be absolute (got "/v1/x")`},
		{name: "duplicate name", in: `{"name":"a","method":"POST","url":"https://a.example/"}` + "\n" + `{"name":"a","method":"POST","url":"https://a.example/"}`,
			want: `s.jsonl:2: duplicate sample name "a" (also on line 1)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read("s.jsonl", strings.NewReader(tc.in))
			if err == nil || err.Error() != tc.want {
				t.Errorf("Read() error = %v, want %s", err, tc.want)
			}
		})
	}
}

func TestSampleGaps(t *testing.T) {
	set, err := rules.NewSet(mustParse(t, sampleRules))
	if err != nil {
		t.Fatal(err)
	}
	samples, err := Read("s.jsonl", strings.NewReader(`{"name":"a","method":"DELETE","url":"https://shop.example/v1/orders/1"}
{"same_key_as":"a","method":"DELETE","url":"https://shop.example/v1/orders/1","headers":{"Idempotency-Key":"x"}}`))
	if err != nil {
		t.Fatal(err)
	}
	got := Check(set, samples, &rules.Deriver{}).Gaps(set)
	want := []string{
		"test.yaml:5:11: route shop/order: no sample, no same_key_as pair, no key_differs_from pair",
		"test.yaml:11:11: route shop/cancel: no key_differs_from pair",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Gaps() =\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// requestSideRules has routes with the request-side features: multipart
// uploads, GraphQL operations, injected keys and raw content keys (the
// rules package's fixture).
var requestSideRules = func() string {
	b, err := os.ReadFile("../testdata/request_side.yaml")
	if err != nil {
		panic(err)
	}
	return string(b)
}()

func TestCheckSamplesRequestSide(t *testing.T) {
	set, err := rules.NewSet(mustParse(t, requestSideRules))
	if err != nil {
		t.Fatal(err)
	}
	const upload = `"method":"POST","url":"https://api.example.com/v1/files"`
	const gql = `"method":"POST","url":"https://api.example.com/graphql","content_type":"application/json"`
	pdf := `{"name":"file","filename":"a.pdf","content_type":"application/pdf","content":"%PDF one"}`
	tests := []struct {
		name  string
		lines []string
		want  []string
	}{
		{name: "multipart pairs", lines: []string{
			`{"name":"a",` + upload + `,"multipart":[{"name":"purpose","value":"dispute_evidence"},` + pdf + `]}`,
			`{"same_key_as":"a",` + upload + `,"multipart":[` + pdf + `,{"name":"purpose","value":"dispute_evidence"},{"name":"expand[]","value":"x"}]}`,
			`{"key_differs_from":"a",` + upload + `,"multipart":[{"name":"purpose","value":"dispute_evidence"},{"name":"file","filename":"a.pdf","content_type":"application/pdf","content_base64":"JVBERiB0d28="}]}`,
		}},
		{name: "multipart lacking the file", lines: []string{
			`{` + upload + `,"multipart":[{"name":"purpose","value":"x"}]}`,
		}, want: []string{`1: route requestside/upload: the body lacks required key field "file"`}},
		{name: "graphql", lines: []string{
			`{"name":"g",` + gql + `,"body":{"query":"mutation A($t: String!) { issueCreate(input: {title: $t}) { success } }","variables":{"input":{"title":"x"}}}}`,
			`{"key_differs_from":"g",` + gql + `,"body":{"query":"mutation B { issueCreate(input: {}) { success } }","variables":{"input":{"title":"y"}}}}`,
			`{` + gql + `,"body":{"query":"{ viewer { id } }"}}`,
			`{` + gql + `,"body":{"query":"query A { a } mutation B { b }"}}`,
		}, want: []string{
			`3: the GraphQL query passes through unguarded: no route selects it`,
			`4: invalid body: GraphQL query has 2 operations and no operationName says which to run`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			samples, err := Read("s.jsonl", strings.NewReader(strings.Join(tc.lines, "\n")))
			if err != nil {
				t.Fatal(err)
			}
			rep := Check(set, samples, &rules.Deriver{})
			var got []string
			for _, p := range rep.Problems {
				got = append(got, strings.TrimPrefix(p, "s.jsonl:"))
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
	t.Run("multipart with a body", func(t *testing.T) {
		_, err := Read("s.jsonl", strings.NewReader(`{`+upload+`,"body":{},"multipart":[{"name":"a","value":"b"}]}`))
		if err == nil || !strings.Contains(err.Error(), "s.jsonl:1: multipart: a multipart sample has no body or content_type") {
			t.Errorf("Read() error = %v", err)
		}
	})
}

// TestGapsUnguardedRoute: an effect none route needs a sample but no pairs.
func TestGapsUnguardedRoute(t *testing.T) {
	set, err := rules.NewSet(mustParse(t, "api: x\nhosts: [x.example]\nroutes:\n  - name: search\n    match: POST /search\n    effect: none\n    reason: reads\n"))
	if err != nil {
		t.Fatal(err)
	}
	samples, err := Read("s.jsonl", strings.NewReader(`{"method":"POST","url":"https://x.example/search","content_type":"application/json","body":{"q":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	rep := Check(set, samples, &rules.Deriver{})
	if gaps := rep.Gaps(set); len(rep.Problems) != 0 || len(gaps) != 0 {
		t.Errorf("problems %q, gaps %q; want none", rep.Problems, gaps)
	}
	if gaps := (&Report{}).Gaps(set); len(gaps) != 1 || !strings.HasSuffix(gaps[0], "route x/search: no sample") {
		t.Errorf("gaps without samples = %q, want one: no sample", gaps)
	}
}

func mustParse(t testing.TB, src string) *rules.API {
	t.Helper()
	api, err := rules.Parse("test.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return api
}

func TestAPIName(t *testing.T) {
	tests := []struct {
		name  string
		route *rules.Route
		want  string
	}{
		{name: "route of an api", route: &rules.Route{API: &rules.API{Name: "shop"}}, want: "shop"},
		{name: "route without an api", route: &rules.Route{}, want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := apiName(tc.route); got != tc.want {
				t.Errorf("apiName() = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestHeldSamples: Check names the samples toolguard would hold rather
// than send: by approval.when (true, or failing on the sample), by
// approval: required, and beyond a caller's budget; a sample of an intent
// seen before is neither held anew nor counted.
func TestHeldSamples(t *testing.T) {
	set, err := rules.NewSet(mustParse(t, `api: pay
hosts: [pay.example]
credential: {header: Authorization}
routes:
  - name: charge
    match: POST /v1/charges
    effect: irreversible
    key: {fields: [ref]}
    approval: {when: 'int(body.amount) > 10000 && body.currency == "eur"'}
    budget: {calls: 2, per: 1m}
  - name: payout
    match: POST /v1/payouts
    effect: irreversible
    approval: required
`))
	if err != nil {
		t.Fatal(err)
	}
	charge := func(cred, body string) string {
		return `{"method":"POST","url":"https://pay.example/v1/charges","content_type":"application/json","headers":{"Authorization":"` + cred + `"},"body":` + body + `}`
	}
	samples, err := Read("s.jsonl", strings.NewReader(strings.Join([]string{
		charge("a", `{"ref":"1","amount":500,"currency":"eur"}`),
		charge("a", `{"ref":"2","amount":20000,"currency":"eur"}`),
		charge("a", `{"ref":"3","currency":"eur"}`),
		charge("a", `{"ref":"4","amount":500,"currency":"eur"}`),
		charge("a", `{"ref":"1","amount":500,"currency":"eur","trace":"again"}`),
		charge("a", `{"ref":"5","amount":500,"currency":"eur"}`),
		charge("b", `{"ref":"5","amount":500,"currency":"eur"}`),
		`{"method":"POST","url":"https://pay.example/v1/payouts","content_type":"application/json","body":{"to":"x"}}`,
	}, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	rep := Check(set, samples, &rules.Deriver{})
	if len(rep.Problems) > 0 {
		t.Fatalf("problems: %q", rep.Problems)
	}
	want := []string{
		"s.jsonl:2: route pay/charge: held for approval: approval.when is true",
		"s.jsonl:3: route pay/charge: held for approval: approval.when could not be evaluated: no such key: amount (fail closed)",
		"s.jsonl:6: route pay/charge: held for approval: over budget (2 calls per 1m0s)",
		"s.jsonl:8: route pay/payout: held for approval: approval: required",
	}
	if got := strings.Join(rep.Held, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("held:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
}
