package rules

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

func TestParseCredential(t *testing.T) {
	tests := []struct {
		name    string
		field   string // the credential line; "" leaves it out
		headers []string
		none    bool
		err     string
	}{
		{name: "absent"},
		{name: "one header", field: "credential: {header: x-api-key}", headers: []string{"X-Api-Key"}},
		{name: "headers", field: "credential: {headers: [Authorization, x-api-key]}", headers: []string{"Authorization", "X-Api-Key"}},
		{name: "none", field: "credential: none", none: true},
		{name: "other word", field: "credential: nobody", err: `test.yaml:4:13: credential: want none, {header: NAME} or {headers: [NAME, ...]} (got "nobody")`},
		{name: "both", field: "credential: {header: A, headers: [B]}", err: "test.yaml:4:25: credential: header and headers are exclusive"},
		{name: "empty list", field: "credential: {headers: []}", err: "test.yaml:4:23: credential.headers: empty"},
		{name: "duplicate", field: "credential: {headers: [X-Key, x-key]}", err: "test.yaml:4:31: credential.headers[1]: duplicate header X-Key"},
		{name: "bad name", field: "credential: {headers: [\"X Key\"]}", err: `test.yaml:4:24: credential.headers[0]: invalid header name "X Key"`},
		{name: "neither", field: "credential: {}", err: `test.yaml:4:1: credential: missing field "header" (or "headers")`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := "api: t\nhosts: [t.example]\nroutes: [{name: r, match: POST /r, effect: irreversible}]\n" + tc.field + "\n"
			api, err := Parse("test.yaml", []byte(src))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Parse: %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(api.CredentialHeaders(), tc.headers) || api.NoCredential != tc.none {
				t.Errorf("headers %v none %v, want %v %v", api.CredentialHeaders(), api.NoCredential, tc.headers, tc.none)
			}
		})
	}
}

func TestCallerCredential(t *testing.T) {
	api := &API{Name: "t"}
	api.SetCredential([]string{"Authorization", "X-Api-Key"}, false)
	tests := []struct {
		name string
		h    http.Header
		want string
	}{
		{name: "first header, as a one-header file keys it", h: http.Header{"Authorization": {"Bearer a"}, "X-Api-Key": {"k"}}, want: "Bearer a"},
		{name: "second header, named", h: http.Header{"X-Api-Key": {"k"}}, want: "X-Api-Key\x00k"},
		{name: "empty first header skipped", h: http.Header{"Authorization": {""}, "X-Api-Key": {"k"}}, want: "X-Api-Key\x00k"},
		{name: "none", h: http.Header{"Api-Key": {"k"}}, want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := api.CallerCredential(tc.h); got != tc.want {
				t.Errorf("CallerCredential = %q, want %q", got, tc.want)
			}
		})
	}
	r := &Route{API: &API{Name: "n", NoCredential: true}, Name: "r"}
	if why := r.MissingCredential(); why != "" {
		t.Errorf("credential: none: MissingCredential = %q, want \"\"", why)
	}
}
