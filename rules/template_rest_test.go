package rules

import "testing"

// Regression: a {NAME...} wildcard's value holds several path segments,
// and a lookup or verification URL built from it escaped its '/' as %2F
// (GET .../contents/docs%2Fa.md), addressing another resource, or none.
func TestExpandMultiSegmentWildcard(t *testing.T) {
	api := mustParse(t, `
api: gh
hosts: [api.github.com]
routes:
  - name: delete_file
    match: DELETE /repos/{owner}/{repo}/contents/{path...}
    effect: reversible
    verify:
      request: GET https://api.github.com/repos/{{path.owner}}/{{path.repo}}/contents/{{path.path}}?p={{path.path}}
      expect: {status: 404}
      within: 1m
`)
	tpl := api.Routes[0].Verify.Request.URL
	got, err := tpl.Expand(Values{Path: map[string]string{"owner": "ac/me", "repo": "api", "path": "docs/a b/ü.md"}}, true)
	if err != nil {
		t.Fatal(err)
	}
	const want = "https://api.github.com/repos/ac%2Fme/api/contents/docs/a%20b/%C3%BC.md?p=docs%2Fa+b%2F%C3%BC.md"
	if got != want {
		t.Errorf("Expand =\n%s\nwant\n%s", got, want)
	}
}
