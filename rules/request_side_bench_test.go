package rules

import (
	"strings"
	"testing"
)

// BenchmarkDeriveMultipart keys an upload of a 1 MiB file: the part is
// hashed as it is read, so allocations stay flat in the file's size.
func BenchmarkDeriveMultipart(b *testing.B) {
	r := routeNamed(b, mustParse(b, requestSideRules), "upload")
	in := multipartBody(b, part{name: "purpose", content: "dispute_evidence"},
		part{name: "file", filename: "a.pdf", contentType: "application/pdf", content: strings.Repeat("x", 1<<20)})
	d := &Deriver{Lean: true}
	b.SetBytes(int64(len(in.Body)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := d.Derive(r, in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSelectGraphQL picks the route of a typical mutation.
func BenchmarkSelectGraphQL(b *testing.B) {
	set, err := NewSet(mustParse(b, requestSideRules))
	if err != nil {
		b.Fatal(err)
	}
	first, _ := set.Match("api.example.com", "POST", "/graphql")
	body := []byte(`{"query":"mutation IssueCreate($input: IssueCreateInput!) { issueCreate(input: $input) { success issue { id identifier url } } }","variables":{"input":{"title":"Bug","teamId":"t1","description":"a long description"}}}`)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if r, _, err := SelectGraphQL(first, body); err != nil || r == nil {
			b.Fatal(r, err)
		}
	}
}
