package rules

import (
	"bytes"
	"encoding/json"
	"errors"
	"mime/multipart"
	"net/textproto"
	"testing"
)

// part is one part of a test multipart body.
type part struct {
	name, filename, contentType, content string
}

func multipartBody(t testing.TB, parts ...part) Input {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		disp := `form-data; name="` + p.name + `"`
		if p.filename != "" {
			disp += `; filename="` + p.filename + `"`
		}
		h.Set("Content-Disposition", disp)
		if p.contentType != "" {
			h.Set("Content-Type", p.contentType)
		}
		pw, err := w.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		pw.Write([]byte(p.content))
	}
	w.Close()
	return Input{ContentType: w.FormDataContentType(), Body: b.Bytes()}
}

func TestMultipartKey(t *testing.T) {
	r := routeNamed(t, mustParse(t, requestSideRules), "upload")
	d := &Deriver{Secret: []byte("s")}
	pdf := part{name: "file", filename: "a.pdf", contentType: "application/pdf", content: "%PDF-1 one"}
	purpose := part{name: "purpose", content: "dispute_evidence"}
	base := multipartBody(t, purpose, pdf)
	key := func(in Input) string {
		t.Helper()
		it, err := d.Derive(r, in)
		if err != nil {
			t.Fatalf("Derive: %v", err)
		}
		return it.Key
	}
	want := key(base)
	tests := []struct {
		name string
		in   Input
		same bool
	}{
		{name: "parts in another order, another boundary", in: multipartBody(t, pdf, purpose), same: true},
		{name: "an extra unkeyed part", in: multipartBody(t, purpose, pdf, part{name: "expand", content: "x"}), same: true},
		{name: "other content", in: multipartBody(t, purpose, part{name: "file", filename: "a.pdf", contentType: "application/pdf", content: "%PDF-1 two"})},
		{name: "other filename", in: multipartBody(t, purpose, part{name: "file", filename: "b.pdf", contentType: "application/pdf", content: pdf.content})},
		{name: "other content type", in: multipartBody(t, purpose, part{name: "file", filename: "a.pdf", contentType: "image/png", content: pdf.content})},
		{name: "other field", in: multipartBody(t, part{name: "purpose", content: "identity"}, pdf)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := key(tc.in) == want; got != tc.same {
				t.Errorf("same key = %v, want %v", got, tc.same)
			}
		})
	}
	t.Run("canonical form", func(t *testing.T) {
		doc, err := CanonicalBody(nil, base.ContentType, base.Body)
		if err != nil {
			t.Fatal(err)
		}
		const want = `{"file":{"content_sha256":"` +
			"fc228c4d13f5b7936fcea89dab201a7fad67b3f059f412e0134763f238315fe6" +
			`","content_type":"application/pdf","filename":"a.pdf","size":10},"purpose":"dispute_evidence"}`
		if string(doc) != want {
			t.Errorf("canonical = %s\nwant        %s", doc, want)
		}
	})
	t.Run("missing file part", func(t *testing.T) {
		_, err := d.Derive(r, multipartBody(t, purpose))
		var mf *MissingFieldsError
		if !errors.As(err, &mf) || len(mf.Fields) != 1 || mf.Fields[0] != "file" {
			t.Errorf("Derive() error = %v, want missing field file", err)
		}
	})
	t.Run("broken body", func(t *testing.T) {
		in := base
		in.Body = in.Body[:len(in.Body)/2]
		if _, err := d.Derive(r, in); !errors.Is(err, ErrInvalidBody) {
			t.Errorf("Derive() error = %v, want ErrInvalidBody", err)
		}
	})
	t.Run("no boundary", func(t *testing.T) {
		in := base
		in.ContentType = "multipart/form-data"
		if _, err := d.Derive(r, in); !errors.Is(err, ErrInvalidBody) {
			t.Errorf("Derive() error = %v, want ErrInvalidBody", err)
		}
	})
}

// FuzzMultipart: any multipart body either gives a valid JSON object or
// an error wrapping ErrInvalidBody.
func FuzzMultipart(f *testing.F) {
	in := multipartBody(f, part{name: "purpose", content: "x"}, part{name: "file", filename: "a.pdf", contentType: "application/pdf", content: "%PDF"})
	f.Add(in.ContentType, in.Body)
	f.Add("multipart/form-data; boundary=b", []byte("--b\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nv\r\n--b--\r\n"))
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		doc, err := CanonicalBody(nil, contentType, body)
		if err != nil {
			if !errors.Is(err, ErrInvalidBody) {
				t.Fatalf("error %v does not wrap ErrInvalidBody", err)
			}
			return
		}
		if !json.Valid(doc) {
			t.Fatalf("canonical body is not JSON: %s", doc)
		}
	})
}
