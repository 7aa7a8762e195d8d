package rules

import "testing"

// The key of an S3 PutObject in virtual-hosted style must tell buckets
// apart: the bucket is the host, and without key.scope host two buckets'
// objects at one path shared a key (the second write was answered with the
// first one's stored response).
func TestDeriveHostScope(t *testing.T) {
	api := mustParse(t, `
api: s3
hosts: ["*.s3.amazonaws.com"]
routes:
  - name: put_object
    match: PUT /{key...}
    effect: irreversible
    key: {content: sha256, fields: [content_sha256], scope: [host, workflow]}
  - name: no_host
    match: POST /{key...}
    effect: irreversible
    key: {content: sha256, fields: [content_sha256], scope: [workflow]}
`)
	d := &Deriver{Secret: []byte("secret")}
	derive := func(route, host string) *Intent {
		t.Helper()
		in := Input{ContentType: "text/plain", Body: []byte("hello"), PathValues: map[string]string{"key": "a/b.txt"}, Host: host, Workflow: "wf"}
		it, err := d.Derive(routeByName(t, api, route), in)
		if err != nil {
			t.Fatal(err)
		}
		return it
	}
	a := derive("put_object", "bucket-a.s3.amazonaws.com")
	want := `{"api":"s3","fields":{"content_sha256":"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"},` +
		`"media_type":"text/plain","path":{"key":"a/b.txt"},"route":"put_object","scope":{"host":"bucket-a.s3.amazonaws.com","workflow":"wf"}}`
	if string(a.Material) != want {
		t.Errorf("Material =\n%s\nwant\n%s", a.Material, want)
	}
	for _, tc := range []struct {
		name, host string
		same       bool
	}{
		{name: "another bucket", host: "bucket-b.s3.amazonaws.com", same: false},
		{name: "case and port", host: "Bucket-A.S3.amazonaws.com:443", same: true},
		{name: "trailing dot", host: "bucket-a.s3.amazonaws.com.", same: true},
	} {
		if got := derive("put_object", tc.host).Key == a.Key; got != tc.same {
			t.Errorf("%s: same key = %v, want %v", tc.name, got, tc.same)
		}
	}
	// Without host in the scope, the host is not part of the key (and the
	// material of existing rules is unchanged).
	if derive("no_host", "bucket-a.s3.amazonaws.com").Key != derive("no_host", "bucket-b.s3.amazonaws.com").Key {
		t.Errorf("no_host: the host changed the key of a route whose scope does not name it")
	}
}
