package rules

import (
	"testing"
	"time"
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

func TestParseRate(t *testing.T) {
	tests := []struct {
		in      string
		want    Rate
		wantErr bool
	}{
		{in: "10/s", want: Rate{10, time.Second}},
		{in: "100/m", want: Rate{100, time.Minute}},
		{in: "5/h", want: Rate{5, time.Hour}},
		{in: "0/s", wantErr: true},
		{in: "10", wantErr: true},
		{in: "10/d", wantErr: true},
		{in: "x/s", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseRate(tc.in)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("ParseRate(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// TestRenderErrorEscapes: a value cannot break out of its JSON string.
func TestRenderErrorEscapes(t *testing.T) {
	f := ErrorFormat{Style: ErrorsJSON, Template: `{"error":{"code":"{{type}}","message":"{{ detail }}","key":"{{key}}"}}`}
	got := string(f.RenderError(map[string]string{"type": "t", "detail": `a "quoted"` + "\n" + `","x":"y`, "key": "k"}))
	want := `{"error":{"code":"t","message":"a \"quoted\"\n\",\"x\":\"y","key":"k"}}`
	if got != want {
		t.Fatalf("RenderError = %s\nwant %s", got, want)
	}
	if _, msg := checkErrorTemplate(f.Template); msg != "" {
		t.Fatal(msg)
	}
	for _, bad := range []string{`{"a":"{{status}}"}`, `{"a":{{detail}}}`, `["{{detail}}"]`, `{"a":"{{detail"}`} {
		if _, msg := checkErrorTemplate(bad); msg == "" {
			t.Errorf("checkErrorTemplate(%s) found nothing wrong", bad)
		} else {
			t.Logf("%s → %s", bad, msg)
		}
	}
}
