package rules

import (
	"os"
	"testing"
)

// requestSideRules has a route for each request-side feature: multipart
// uploads, GraphQL operations, injected keys, raw content keys and
// conditional headers (testdata/request_side.yaml, which rules/samples'
// tests read too).
var requestSideRules = readFixture("testdata/request_side.yaml")

// readFixture reads a rule file the tests share with rules/samples.
func readFixture(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// routeNamed returns the named route of api, failing the test without
// one.
func routeNamed(t testing.TB, api *API, name string) *Route {
	t.Helper()
	for _, r := range api.Routes {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no route %q", name)
	return nil
}
