package rules

import "testing"

// TestSyntax checks the exported syntax checks against what Parse
// accepts.
func TestSyntax(t *testing.T) {
	tests := []struct {
		name string
		got  bool
		want bool
	}{
		{name: "api name", got: ValidAPIName("stripe_v2-eu"), want: true},
		{name: "api name with capitals", got: ValidAPIName("Stripe"), want: false},
		{name: "route name", got: ValidRouteName("create.charge_v2-X"), want: true},
		{name: "route name with a slash", got: ValidRouteName("charges/create"), want: false},
		{name: "host", got: ValidHost("*.s3.amazonaws.com:443") == nil, want: true},
		{name: "host as a URL", got: ValidHost("https://api.example.com") == nil, want: false},
		{name: "header name", got: ValidHeaderName("Idempotency-Key"), want: true},
		{name: "header name with a space", got: ValidHeaderName("Idempotency Key"), want: false},
		{name: "key path", got: ValidKeyPath("items.#.price") == nil, want: true},
		{name: "key path with an empty component", got: ValidKeyPath("items..price") == nil, want: false},
		{name: "key path with an escaped dot", got: ValidKeyPath(`metadata.order\.id`) == nil, want: true},
		{name: "key path with a dangling escape", got: ValidKeyPath(`metadata\`) == nil, want: false},
		{name: "escaped name is a simple path", got: validSimplePath(EscapeSimplePath("metadata[key].v1")) == nil, want: true},
		{name: "escaped name", got: EscapeSimplePath("a.b[0]") == `a\.b\[0\]`, want: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
}
