package rules

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"testing"
)

// Mailgun's SDKs send multipart/form-data; the v:toolguard_key reference
// must reach such bodies too (they were refused with 400 invalid-body), as
// a field part added under the body's own boundary, with every other part
// (files included) sent byte for byte, and without changing the key.
func TestInjectFormIntoMultipart(t *testing.T) {
	api := mustParse(t, `
api: mailgun
hosts: [api.mailgun.net]
routes:
  - name: send
    match: POST /v3/{domain}/messages
    effect: irreversible
    key: {fields: [from, to, subject, attachment]}
    inject: {form: "v:toolguard_key"}
  - name: whole
    match: POST /v3/{domain}/whole
    effect: irreversible
    inject: {form: "v:toolguard_key"}
`)
	pdf := "%PDF-1.4\r\n--not-a-boundary\r\n\x00\x01binary"
	plain := multipartBody(t,
		part{name: "from", content: "billing@mg.example.com"},
		part{name: "to", content: "ada@example.com"},
		part{name: "subject", content: "Your invoice"},
		part{name: "attachment", filename: "invoice.pdf", contentType: "application/pdf", content: pdf},
	)
	// A retry that copied the injected part of an earlier send.
	copied := multipartBody(t,
		part{name: "v:toolguard_key", content: "0123"},
		part{name: "from", content: "billing@mg.example.com"},
		part{name: "to", content: "ada@example.com"},
		part{name: "subject", content: "Your invoice"},
		part{name: "attachment", filename: "invoice.pdf", contentType: "application/pdf", content: pdf},
	)
	for _, name := range []string{"send", "whole"} {
		r := routeNamed(t, api, name)
		d := &Deriver{}
		a, err := d.Derive(r, plain)
		if err != nil {
			t.Fatalf("%s: Derive: %v", name, err)
		}
		b, err := d.Derive(r, copied)
		if err != nil {
			t.Fatalf("%s: Derive copied: %v", name, err)
		}
		if a.Key != b.Key {
			t.Errorf("%s: the injected part changed the key", name)
		}
		for _, in := range []Input{plain, copied} {
			out, err := r.Apply(http.Header{}, in.ContentType, in.Body, testKey)
			if err != nil {
				t.Fatalf("%s: Apply: %v", name, err)
			}
			got := readParts(t, in.ContentType, out)
			if len(got["v:toolguard_key"]) != 1 || got["v:toolguard_key"][0] != testKey {
				t.Errorf("%s: v:toolguard_key parts %q, want the key once", name, got["v:toolguard_key"])
			}
			if f := got["attachment"]; len(f) != 1 || f[0] != pdf {
				t.Errorf("%s: the file part changed: %q", name, f)
			}
			if got["to"][0] != "ada@example.com" || got["subject"][0] != "Your invoice" {
				t.Errorf("%s: fields changed: %v", name, got)
			}
		}
	}
	_, err := routeNamed(t, api, "send").Apply(http.Header{}, "multipart/form-data", plain.Body, testKey)
	if !errors.Is(err, ErrInvalidBody) {
		t.Errorf("multipart without a boundary: %v, want invalid body", err)
	}
}

// readParts reads a multipart body into part name → values.
func readParts(t *testing.T, contentType string, body []byte) map[string][]string {
	t.Helper()
	_, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		t.Fatal(err)
	}
	r := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	out := map[string][]string{}
	for {
		p, err := r.NextRawPart()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("read the sent body: %v", err)
		}
		b, _ := io.ReadAll(p)
		out[p.FormName()] = append(out[p.FormName()], string(b))
	}
}
