package verifiers

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolguard/toolguard/rules"
)

func mustTemplate(t *testing.T, s string) *rules.Template {
	t.Helper()
	tpl, err := rules.ParseTemplate(s)
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

func TestLookup(t *testing.T) {
	var mu sync.Mutex
	var gotAuth, gotQuery string
	seen := func() (string, string) { mu.Lock(); defer mu.Unlock(); return gotAuth, gotQuery }
	answer := func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		gotAuth, gotQuery = r.Header.Get("Authorization"), r.URL.RawQuery
		mu.Unlock()
		switch r.URL.Query().Get("ref") {
		case "one":
			fmt.Fprint(w, `{"data":[{"id":"inv_9"}]}`)
		case "none":
			fmt.Fprint(w, `{"data":[]}`)
		case "malformed":
			fmt.Fprint(w, `{"data":[{"id":`)
		case "error":
			http.Error(w, "boom", 500)
		case "huge":
			fmt.Fprint(w, `{"data":[],"pad":"`+strings.Repeat("x", 4096)+`"}`)
		case "slow":
			<-r.Context().Done()
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(answer))
	defer srv.Close()
	l := &rules.Lookup{
		Request:     rules.Request{Method: "GET", URL: mustTemplate(t, srv.URL+"/v1/invoices?ref={{body.ref}}")},
		Found:       &rules.Expectation{Status: []int{200}, Body: []rules.BodyMatch{{Path: "data.#", Value: "1"}}},
		Absent:      &rules.Expectation{Status: []int{200}, Body: []rules.BodyMatch{{Path: "data.#", Value: "0"}}},
		OperationID: rules.Extractor{Source: rules.SourceBody, Path: "data.0.id"},
	}
	c := &Client{Timeout: 200 * time.Millisecond, MaxBody: 1024}
	tests := []struct {
		name   string
		ref    string
		want   Answer
		wantOp string
	}{
		{name: "found", ref: "one", want: Yes, wantOp: "inv_9"},
		{name: "absent", ref: "none", want: No},
		{name: "malformed is unknown, never absent", ref: "malformed", want: Unknown},
		{name: "5xx is unknown", ref: "error", want: Unknown},
		{name: "oversized is unknown", ref: "huge", want: Unknown},
		{name: "timeout is unknown", ref: "slow", want: Unknown},
		{name: "escaped value", ref: "a&ref=one", want: Unknown},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			creds := http.Header{"Authorization": {"Bearer k"}}
			got := c.Lookup(context.Background(), l, rules.Values{Body: []byte(fmt.Sprintf(`{"ref":%q}`, tc.ref))}, creds)
			if got.Answer != tc.want || got.OperationID != tc.wantOp {
				t.Fatalf("Lookup = %+v, want %s %q", got, tc.want, tc.wantOp)
			}
			if auth, _ := seen(); auth != "Bearer k" {
				t.Errorf("credential not reused: %q", gotAuth)
			}
			if strings.Contains(got.Evidence, "Bearer") {
				t.Errorf("evidence leaks the credential: %s", got.Evidence)
			}
		})
	}
	if _, q := seen(); !strings.Contains(q, "a%26ref%3Done") && !strings.Contains(q, "ref=a%26ref") {
		t.Errorf("template value not escaped in the URL: %q", gotQuery)
	}
	// A value the template needs but the request lacks: cannot query.
	got := c.Lookup(context.Background(), l, rules.Values{Body: []byte(`{}`)}, nil)
	if got.Answer != Unknown {
		t.Errorf("missing value: %+v, want unknown", got)
	}
}

func TestProbe(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/invoices/good":
			fmt.Fprint(w, `{"status":"open"}`)
		case "/v1/invoices/liar":
			fmt.Fprint(w, `{"status":"draft"}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	v := &rules.Verify{
		Request: rules.Request{Method: "GET", URL: mustTemplate(t, srv.URL+"/v1/invoices/{{operation_id}}")},
		Expect:  rules.Expectation{Status: []int{200}, Body: []rules.BodyMatch{{Path: "status", Value: "open"}}},
	}
	c := &Client{}
	for _, tc := range []struct {
		op   string
		want Answer
	}{{"good", Yes}, {"liar", No}, {"gone", No}, {"", Unknown}} {
		t.Run(tc.op, func(t *testing.T) {
			if got := c.Probe(context.Background(), v, rules.Values{OperationID: tc.op}, nil); got.Answer != tc.want {
				t.Fatalf("Probe(%q) = %+v, want %s", tc.op, got, tc.want)
			}
		})
	}
}
