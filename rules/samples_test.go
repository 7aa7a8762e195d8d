package rules

import (
	"strings"
	"testing"
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
`

func TestCheckSamples(t *testing.T) {
	set, err := NewSet(mustParse(t, sampleRules))
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
			samples, err := ReadSamples("s.jsonl", strings.NewReader(strings.Join(tc.lines, "\n")))
			if err != nil {
				t.Fatal(err)
			}
			rep := CheckSamples(set, samples, &Deriver{})
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
			_, err := ReadSamples("s.jsonl", strings.NewReader(tc.in))
			if err == nil || err.Error() != tc.want {
				t.Errorf("ReadSamples() error = %v, want %s", err, tc.want)
			}
		})
	}
}

func TestSampleGaps(t *testing.T) {
	set, err := NewSet(mustParse(t, sampleRules))
	if err != nil {
		t.Fatal(err)
	}
	samples, err := ReadSamples("s.jsonl", strings.NewReader(`{"name":"a","method":"DELETE","url":"https://shop.example/v1/orders/1"}
{"same_key_as":"a","method":"DELETE","url":"https://shop.example/v1/orders/1","headers":{"Idempotency-Key":"x"}}`))
	if err != nil {
		t.Fatal(err)
	}
	got := CheckSamples(set, samples, &Deriver{}).Gaps(set)
	want := []string{
		"test.yaml:5:11: route shop/order: no sample, no same_key_as pair, no key_differs_from pair",
		"test.yaml:11:11: route shop/cancel: no key_differs_from pair",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Gaps() =\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
