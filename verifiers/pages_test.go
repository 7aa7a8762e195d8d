package verifiers

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolguard/toolguard/rules"
)

// TestLookupPages: a paged lookup reads pages until the effect is found
// or no page is left; running out of its page budget is unknown, never
// absent. The found object is what lookup.answer names.
func TestLookupPages(t *testing.T) {
	// Five pages of one object each; the match for ref=N is on page N.
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		page := 1
		fmt.Sscan(r.URL.Query().Get("page"), &page)
		want := r.URL.Query().Get("ref")
		ref := fmt.Sprint(page)
		data := fmt.Sprintf(`[{"id":"obj_%d","ref":%q}]`, page, ref)
		if ref != want {
			data = `[]`
		}
		next := "null"
		if page < 5 {
			next = fmt.Sprintf(`"%d"`, page+1)
		}
		fmt.Fprintf(w, `{"data":%s,"has_more":%v,"next_page":%s}`, data, page < 5, next)
	}))
	defer srv.Close()
	lookup := func(pages int) *rules.Lookup {
		return &rules.Lookup{
			Request:     rules.Request{Method: "GET", URL: mustTemplate(t, srv.URL+"/search?ref={{body.ref}}")},
			Found:       &rules.Expectation{Body: []rules.BodyMatch{{Path: "data.#", Value: "1"}}},
			Absent:      &rules.Expectation{Body: []rules.BodyMatch{{Path: "data.#", Value: "0"}}},
			OperationID: rules.Extractor{Source: rules.SourceBody, Path: "data.0.id"},
			Answer:      &rules.RecoveredAnswer{Body: "data.0", Status: 201},
			Next:        &rules.Pagination{Cursor: "next_page", Param: "page", HasMore: "has_more", Pages: pages},
		}
	}
	tests := []struct {
		name     string
		ref      string
		pages    int
		want     Answer
		opID     string
		requests int64
	}{
		{name: "first page", ref: "1", pages: 5, want: Yes, opID: "obj_1", requests: 1},
		{name: "third page", ref: "3", pages: 5, want: Yes, opID: "obj_3", requests: 3},
		{name: "absent after the last page", ref: "9", pages: 5, want: No, requests: 5},
		{name: "page budget spent is unknown", ref: "5", pages: 3, want: Unknown, requests: 3},
	}
	c := &Client{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			requests.Store(0)
			v := rules.Values{Key: "k", Body: []byte(`{"ref":"` + tc.ref + `"}`)}
			got := c.Lookup(context.Background(), lookup(tc.pages), v, nil)
			if got.Answer != tc.want || got.OperationID != tc.opID || requests.Load() != tc.requests {
				t.Fatalf("Lookup = %+v after %d requests; want %s %q after %d", got, requests.Load(), tc.want, tc.opID, tc.requests)
			}
			if tc.want == Yes && !strings.Contains(string(got.Recovered), `"id":"`+tc.opID+`"`) {
				t.Fatalf("Recovered = %s, want the found object", got.Recovered)
			}
		})
	}
}
