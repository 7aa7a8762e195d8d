package verifiers

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/toolguard/toolguard/rules"
)

// Regression: verify.before took every answer that did not meet its
// expectation for "the thing is not there", so a check refused with 401,
// 403, 429 or 5xx (a SigV4-signed delete whose credential cannot sign the
// check, an expired token, a rate limit) committed the delete as already
// done and never sent it. Only a 2xx, 404 or 410 answer says the thing is
// not there; any other is unknown, and the call goes.
func TestCheckOnlyDefinitiveAnswersSayNo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(r.URL.Query().Get("code"))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		w.Write([]byte(`{"status":"` + r.URL.Query().Get("state") + `"}`))
	}))
	defer srv.Close()
	ch := &rules.Check{
		Request: rules.Request{Method: "GET", URL: mustTemplate(t, srv.URL+"/things/1?code={{body.code}}&state={{body.state}}")},
		Expect:  rules.Expectation{Status: []int{200}, Body: []rules.BodyMatch{{Path: "status", Value: "open"}}},
	}
	c := &Client{}
	for _, tc := range []struct {
		name, code, state string
		want              Answer
	}{
		{name: "exists", code: "200", state: "open", want: Yes},
		{name: "200 in another state is not there", code: "200", state: "cancelled", want: No},
		{name: "404 is not there", code: "404", state: "x", want: No},
		{name: "410 is not there", code: "410", state: "x", want: No},
		{name: "401 is unknown", code: "401", state: "x", want: Unknown},
		{name: "403 is unknown", code: "403", state: "x", want: Unknown},
		{name: "429 is unknown", code: "429", state: "x", want: Unknown},
		{name: "400 is unknown", code: "400", state: "x", want: Unknown},
		{name: "5xx is unknown", code: "503", state: "x", want: Unknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := rules.Values{Body: []byte(`{"code":"` + tc.code + `","state":"` + tc.state + `"}`)}
			if got := c.Check(context.Background(), ch, v, nil); got.Answer != tc.want {
				t.Fatalf("Check = %+v, want %s", got, tc.want)
			}
		})
	}
}
