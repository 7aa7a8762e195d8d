package rules

import "testing"

// requestSideRules has a route for each request-side feature: multipart
// uploads, GraphQL operations, injected keys, raw content keys and
// conditional headers.
const requestSideRules = `
api: requestside
hosts: [api.example.com]
routes:
  - name: upload
    match: POST /v1/files
    effect: irreversible
    key: {fields: [purpose, file]}
  - name: create_issue
    match: POST /graphql
    graphql: {field: issueCreate}
    effect: irreversible
    key: {fields: [variables.input.title]}
  - name: archive
    match: POST /graphql
    graphql: {operation: Archive}
    effect: reversible
    key: {fields: [variables.id]}
  - name: export
    match: POST /graphql
    graphql: {field: exportData, type: query}
    effect: reversible
  - name: charge
    match: POST /v1/charges
    effect: irreversible
    inject: {form: "metadata[toolguard_key]"}
  - name: email
    match: POST /email
    effect: irreversible
    key: {fields: [To]}
    inject: {body: Metadata.toolguard_key}
  - name: issue
    match: POST /issues
    effect: irreversible
    key: {fields: [title, body]}
    inject: {append: body, template: "\n<!-- toolguard:{{key}} -->"}
  - name: put
    match: PUT /{bucket}/{object...}
    effect: reversible
    key: {content: sha256}
    inject: {header: X-Amz-Meta-Toolguard-Key}
    conditional: {header: If-None-Match, value: "*"}
`

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
