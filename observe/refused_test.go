package observe

import (
	"testing"

	"github.com/toolguard/toolguard/journal"
)

// TestRefusedStep: the key of a refused request is stable (journals keep
// it across versions) and changes with each part of the request it
// hashes.
func TestRefusedStep(t *testing.T) {
	base := journal.Step{API: "shop", Route: "create", CredentialMAC: "mac1", Method: "POST", Host: "api.example.com:443", Path: "/v1/charges/x"}
	const path, body = "/v1/charges%2Fx", `{"amount":`
	got := RefusedStep(base, path, []byte(body))
	// The key and hash proxy's refusedKey gave this request before the
	// move to this package.
	const wantKey = "02b58ef24b7551f397a2a56a8ddb5c2bcde1b95502643c56c29a7a77204c9b8b"
	const wantHash = "337879522013eaabe69295cda51036007006fcc4011a5816a1f174ccb2bc0854"
	if got.Key != wantKey || got.BodyHash != wantHash {
		t.Errorf("RefusedStep = key %s hash %s, want %s %s", got.Key, got.BodyHash, wantKey, wantHash)
	}
	if got.Path != base.Path || got.API != base.API || got.CredentialMAC != base.CredentialMAC {
		t.Errorf("RefusedStep changed the record's fields: %+v", got)
	}
	tests := []struct {
		name string
		edit func(st *journal.Step, path, body *string)
	}{
		{name: "api", edit: func(st *journal.Step, _, _ *string) { st.API = "bank" }},
		{name: "route", edit: func(st *journal.Step, _, _ *string) { st.Route = "refund" }},
		{name: "caller", edit: func(st *journal.Step, _, _ *string) { st.CredentialMAC = "mac2" }},
		{name: "method", edit: func(st *journal.Step, _, _ *string) { st.Method = "PUT" }},
		{name: "host", edit: func(st *journal.Step, _, _ *string) { st.Host = "api.example.org:443" }},
		{name: "path", edit: func(_ *journal.Step, p, _ *string) { *p = "/v1/charges/y" }},
		{name: "body", edit: func(_ *journal.Step, _, b *string) { *b = `{"amount":1` }},
		{name: "parts shifted", edit: func(st *journal.Step, _, _ *string) { st.API, st.Route = "shopcreate", "" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, p, b := base, path, body
			tc.edit(&st, &p, &b)
			if k := RefusedStep(st, p, []byte(b)).Key; k == wantKey {
				t.Errorf("the key does not change with the %s", tc.name)
			}
		})
	}
}
