package rules

import (
	"fmt"
	"strings"
	"testing"
)

// TestRequestFields: every body field with its value, redact paths masked,
// within the limits, with a marker for what was cut. Regression: an
// approval showed only the key fields ("what": "buy one coffee") of a body
// that also sent to_account and amount.
func TestRequestFields(t *testing.T) {
	api := mustParse(t, `
api: pay
hosts: [pay.example.com]
routes:
  - name: approve
    match: POST /v1/approve
    effect: irreversible
    key: {fields: [what]}
    redact: [card.number, "holders.#.ssn"]
    approval: required
`)
	r := routeByName(t, api, "approve")
	long := strings.Repeat("x", 300)
	many := make([]string, 70)
	for i := range many {
		many[i] = fmt.Sprintf(`"f%02d":%d`, i, i)
	}
	tests := []struct {
		name, ct, body string
		want           string // the fields, "path=value" joined by " "
	}{
		{name: "every field", ct: "application/json",
			body: `{"what":"buy one coffee","to_account":"ATTACKER","amount":9999999,"card":{"number":"4242424242424242","exp":"12/30"},"holders":[{"ssn":"078-05-1120","name":"a"}],"tags":[],"note":null}`,
			want: `amount=9999999 card.exp="12/30" card.number="[redacted]" holders.0.name="a" holders.0.ssn="[redacted]" note=null tags=[] to_account="ATTACKER" what="buy one coffee"`},
		{name: "form", ct: "application/x-www-form-urlencoded", body: "what=coffee&to_account=ATTACKER",
			want: `to_account="ATTACKER" what="coffee"`},
		{name: "dotted name", ct: "application/json", body: `{"what":"a","metadata":{"a.b":"c"}}`, want: `metadata.a\.b="c" what="a"`},
		{name: "long value cut", ct: "application/json", body: `{"what":"` + long + `"}`, want: `what="` + long[:RequestFieldValueMax-len(`"`)-len("…")] + "…"},
		{name: "too many fields", ct: "application/json", body: `{"what":"a",` + strings.Join(many, ",") + `}`,
			want: "f00=0 f01=1 f02=2"},
		{name: "empty body", ct: "application/json", body: ``, want: ``},
		{name: "unparsable", ct: "application/json", body: `{"what":`, want: ``},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := RequestFields(r, Input{ContentType: tc.ct, Body: []byte(tc.body)})
			parts := make([]string, len(got))
			for i, f := range got {
				parts[i] = f.Field + "=" + f.Value
			}
			text := strings.Join(parts, " ")
			if tc.name == "too many fields" {
				last := got[len(got)-1]
				if len(got) != RequestFieldsMax+1 || last.Field != SummaryOmitted || last.Value != "7 more fields not shown" || !strings.HasPrefix(text, tc.want) {
					t.Fatalf("got %d fields, last %+v: %s", len(got), last, text)
				}
				return
			}
			if text != tc.want {
				t.Errorf("got  %s\nwant %s", text, tc.want)
			}
			if strings.Contains(text, "4242424242424242") || strings.Contains(text, "078-05-1120") {
				t.Errorf("a redacted value is shown: %s", text)
			}
		})
	}
}

func TestShownQuery(t *testing.T) {
	tests := []struct{ raw, want string }{
		{raw: "", want: ""},
		{raw: "to_account=ATTACKER&amount=9999999", want: "to_account=ATTACKER&amount=9999999"},
		{raw: "api_key=sk_live_1&token=t&X-Amz-Signature=abc&password=p&access_token=a&apikey=k&sig=s&q=coffee",
			want: "api_key=[redacted]&token=[redacted]&X-Amz-Signature=[redacted]&password=[redacted]&access_token=[redacted]&apikey=[redacted]&sig=[redacted]&q=coffee"},
		{raw: "client%5Fsecret=x&flag", want: "client%5Fsecret=[redacted]&flag"},
		{raw: "a=" + strings.Repeat("v", 300), want: "a=" + strings.Repeat("v", RequestFieldValueMax-len("…")) + "…"},
	}
	for _, tc := range tests {
		if got := ShownQuery(tc.raw); got != tc.want {
			t.Errorf("ShownQuery(%q)\n got  %q\n want %q", tc.raw, got, tc.want)
		}
	}
}
