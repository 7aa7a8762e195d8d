package proxy

import (
	"net/http"
	"strings"
	"testing"
)

// CredentialScope, which the admin API limits the agent token with, is
// the scope the proxy keys the same caller's calls in: the HMAC of the
// credential in the header the rule file names (the first by default).
func TestCredentialScope(t *testing.T) {
	h := startHarness(t, harnessConfig{Routes: invoiceRoute, Credential: "{headers: [Authorization, X-Api-Key]}"})
	mac := func(api, header, value string) string {
		return h.srv.credentialMAC(h.srv.apiNamed(api), http.Header{header: {value}})
	}
	tests := []struct {
		name, api, header, credential string
		want                          string
		err                           string // substring of the error
	}{
		{name: "first header by default", api: "billing", credential: "Bearer sk_a", want: mac("billing", "Authorization", "Bearer sk_a")},
		{name: "named header, any case", api: "billing", header: "x-api-key", credential: "k1", want: mac("billing", "X-Api-Key", "k1")},
		{name: "header the api does not list", api: "billing", header: "X-Token", credential: "k1",
			err: "api billing takes its credential in Authorization, X-Api-Key, not X-Token"},
		{name: "unknown api", api: "nope", credential: "k1", err: `api "nope"`},
		{name: "the unmatched policy's api", api: "unmatched", credential: "Bearer sk_a", want: mac("unmatched", "Authorization", "Bearer sk_a")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := h.srv.CredentialScope(tc.api, tc.header, tc.credential)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("scope %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
