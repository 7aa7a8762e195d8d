package verifiers

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/toolguard/toolguard/rules"
)

// A lookup whose filter the provider ignores (Mailgun's events API answers
// the latest events whatever an unknown filter says) must not pass another
// effect off as ours: found's contains names {{key}}, so only an answer
// that holds this step's key is found, and a page of other events is
// neither found nor absent.
func TestLookupContainsKey(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("page") {
		case "ours":
			fmt.Fprint(w, `{"items":[{"id":"e1","user-variables":{"toolguard_key":"k-ours"}}]}`)
		case "other":
			fmt.Fprint(w, `{"items":[{"id":"e2","user-variables":{"toolguard_key":"k-other"}}]}`)
		default:
			fmt.Fprint(w, `{"items":[]}`)
		}
	}))
	defer srv.Close()
	l := &rules.Lookup{
		Request:     rules.Request{Method: "GET", URL: mustTemplate(t, srv.URL+"/events?page={{body.page}}")},
		Found:       &rules.Expectation{Status: []int{200}, Present: []string{"items.0"}, Contains: `"toolguard_key":"{{key}}"`},
		Absent:      &rules.Expectation{Status: []int{200}, Body: []rules.BodyMatch{{Path: "items.#", Value: "0"}}},
		OperationID: rules.Extractor{Source: rules.SourceBody, Path: "items.0.id"},
	}
	c := &Client{}
	for _, tc := range []struct {
		name, page string
		want       Answer
	}{
		{name: "the answer holds our key", page: "ours", want: Yes},
		{name: "another effect's key is not found, and not absent", page: "other", want: Unknown},
		{name: "empty page is absent", page: "none", want: No},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := c.Lookup(context.Background(), l, rules.Values{Key: "k-ours", Body: []byte(fmt.Sprintf(`{"page":%q}`, tc.page))}, nil)
			if got.Answer != tc.want {
				t.Fatalf("Lookup = %+v, want %s", got, tc.want)
			}
		})
	}
	if l.Found.Contains != `"toolguard_key":"{{key}}"` {
		t.Errorf("Lookup changed the rule's expectation: %q", l.Found.Contains)
	}
}
