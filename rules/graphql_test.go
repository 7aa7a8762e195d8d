package rules

import (
	"errors"
	"testing"
)

func TestParseGraphQLRequest(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		want    GraphQLOperation
		wantErr string
	}{
		{name: "named mutation", body: `{"query":"mutation CreateIssue($i: IssueCreateInput!) { issueCreate(input: $i) { success } }"}`,
			want: GraphQLOperation{Type: "mutation", Name: "CreateIssue", Field: "issueCreate"}},
		{name: "alias, directives, comments and strings", body: `{"query":"# a { comment\nmutation M @dir(x: \"}\") { made: issueCreate(input: {title: \"a } b\"}) { id } other { x } }"}`,
			want: GraphQLOperation{Type: "mutation", Name: "M", Field: "issueCreate"}},
		{name: "shorthand query", body: `{"query":"{ viewer { id } }"}`, want: GraphQLOperation{Type: "query", Field: "viewer"}},
		{name: "operationName picks one", body: `{"query":"query A { a } mutation B { b } fragment F on T { x }","operationName":"B"}`,
			want: GraphQLOperation{Type: "mutation", Name: "B", Field: "b"}},
		{name: "block string", body: `{"query":"mutation { c(body: \"\"\"}{\"\"\") { id } }"}`, want: GraphQLOperation{Type: "mutation", Field: "c"}},
		{name: "several operations, no name", body: `{"query":"query A { a } mutation B { b }"}`,
			wantErr: "invalid body: GraphQL query has 2 operations and no operationName says which to run"},
		{name: "unknown operationName", body: `{"query":"query A { a }","operationName":"Z"}`,
			wantErr: `invalid body: GraphQL query has 0 operations named "Z" (want exactly one)`},
		{name: "batch", body: `[{"query":"{ a }"}]`, wantErr: "invalid body: GraphQL batches are not supported (send one operation per request)"},
		{name: "unbalanced", body: `{"query":"mutation { a(x: 1 }"}`, wantErr: `invalid body: GraphQL query: unbalanced "}" at offset 18`},
		{name: "no query", body: `{"variables":{}}`, wantErr: "invalid body: GraphQL request without a query (persisted queries are not supported)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseGraphQLRequest([]byte(tc.body))
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr || !errors.Is(err, ErrInvalidBody) {
					t.Fatalf("error = %v, want %q wrapping ErrInvalidBody", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("ParseGraphQLRequest() = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestSelectGraphQL(t *testing.T) {
	api := mustParse(t, requestSideRules)
	set, err := NewSet(api)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := set.Match("api.example.com", "POST", "/graphql")
	tests := []struct {
		name      string
		body      string
		wantRoute string
		wantPass  bool
	}{
		{name: "by root field", body: `{"query":"mutation X { issueCreate(input: {}) { id } }"}`, wantRoute: "create_issue"},
		{name: "by operation name", body: `{"query":"mutation Archive($id: ID!) { issueArchive(id: $id) { success } }","variables":{"id":"1"}}`, wantRoute: "archive"},
		{name: "a query passes", body: `{"query":"query { issues { nodes { id } } }"}`, wantPass: true},
		{name: "a query with a mutation's root field passes", body: `{"query":"query Archive { issueCreate { id } }"}`, wantPass: true},
		{name: "a query a route selects with type: query", body: `{"query":"{ exportData(all: true) { url } }"}`, wantRoute: "export"},
		{name: "an unselected mutation is an unlisted write", body: `{"query":"mutation { teamCreate { id } }"}`, wantRoute: UnlistedRoute},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, pass, err := SelectGraphQL(first, []byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			name := ""
			if r != nil {
				name = r.Name
			}
			if name != tc.wantRoute || pass != tc.wantPass {
				t.Errorf("SelectGraphQL() = %q, pass %v; want %q, pass %v", name, pass, tc.wantRoute, tc.wantPass)
			}
		})
	}
	t.Run("an unselected mutation is unmatched under unlisted: pass", func(t *testing.T) {
		set, err := NewSet(mustParse(t, requestSideRules+"unlisted: pass\n"))
		if err != nil {
			t.Fatal(err)
		}
		first, _ := set.Match("api.example.com", "POST", "/graphql")
		if r, pass, err := SelectGraphQL(first, []byte(`{"query":"mutation { teamCreate { id } }"}`)); r != nil || pass || err != nil {
			t.Errorf("SelectGraphQL() = %v, pass %v, error %v; want nil, false, nil", r, pass, err)
		}
	})
	t.Run("two operations and no operationName", func(t *testing.T) {
		r, pass, err := SelectGraphQL(first, []byte(`{"query":"query A { a } mutation B { b }"}`))
		if !errors.Is(err, ErrInvalidBody) || r != nil || pass {
			t.Errorf("SelectGraphQL() = %v, pass %v, error %v; want an error wrapping ErrInvalidBody", r, pass, err)
		}
	})
}

// FuzzParseGraphQLDocument: the document parser never panics, and an
// operation it returns has a known type.
func FuzzParseGraphQLDocument(f *testing.F) {
	for _, s := range []string{
		"mutation A($i: In!) @d(x: 1) { a: issueCreate(input: $i) { id } }",
		"{ a } fragment F on T { b }",
		`query { c(s: """a""" t: "b\"}") }`,
		"subscription S { e }",
		"# c\n{",
	} {
		f.Add(s, "")
	}
	f.Fuzz(func(t *testing.T, doc, name string) {
		op, err := ParseGraphQLDocument(doc, name)
		if err != nil {
			if !errors.Is(err, ErrInvalidBody) {
				t.Fatalf("error %v does not wrap ErrInvalidBody", err)
			}
			return
		}
		if op.Type != "query" && op.Type != "mutation" && op.Type != "subscription" {
			t.Fatalf("operation type %q", op.Type)
		}
	})
}
