package proxy

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/lifecycle"
)

// A REST lookup or verification (verifiers.Client) that the system
// answers with a 307 to another host does not follow it: the caller's
// credential never reaches the redirect's target, and the answer is not
// taken as found or visible.
func TestLookupRedirectNotFollowed(t *testing.T) {
	tests := []struct {
		name string
		// extra is the route's lookup or verify section.
		extra string
		// lost makes the first attempt end without an answer, so that the
		// retry asks the lookup.
		lost bool
		// wantHold is the step's hold reason at the end.
		wantHold string
	}{
		{name: "lookup", lost: true, wantHold: lifecycle.ReasonLookupUnknown, extra: `    lookup:
      request: GET {{sys}}/search?ref={{body.ref}}
      found: {status: 200, body: {"data.#": "1"}}
      absent: {status: 200}
`},
		{name: "verification", wantHold: lifecycle.ReasonNotVisible, extra: `    operation_id: body:id
    verify:
      request: GET {{sys}}/things/{{operation_id}}
      expect: {status: 200}
      within: 200ms
      mode: sync
`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			elsewhere := newCredentialSink(t)
			sys := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, elsewhere.url, http.StatusTemporaryRedirect)
			}))
			t.Cleanup(sys.Close)
			routes := "  - name: create_invoice\n    match: POST /v1/invoices\n    effect: irreversible\n    key: {fields: [ref]}\n" +
				strings.ReplaceAll(tc.extra, "{{sys}}", sys.URL)
			h := startHarness(t, harnessConfig{Routes: routes})
			if tc.lost {
				h.up.setHook(func(*http.Request) bool { return false }) // sent, never answered
			}
			h.post("/v1/invoices", `{"ref":"r-1"}`, "Authorization", "Bearer alice")
			if tc.lost {
				h.up.setHook(func(*http.Request) bool { return true })
				h.srv.now = func() time.Time { return time.Now().Add(time.Hour) } // the attempt has settled
				h.post("/v1/invoices", `{"ref":"r-1"}`, "Authorization", "Bearer alice")
			}
			if n, auth := elsewhere.seen(); n != 0 {
				t.Errorf("the redirect's target was contacted %d times (Authorization %q), want never", n, auth)
			}
			sts := h.steps()
			if len(sts) != 1 || sts[0].Hold != journal.HoldNeedsReview.String() || sts[0].HoldReason != tc.wantHold {
				t.Errorf("steps = %+v, want one held %s", sts, tc.wantHold)
			}
		})
	}
}
