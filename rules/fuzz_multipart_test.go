package rules

import (
	"bytes"
	"mime"
	"mime/multipart"
	"net/textproto"
	"testing"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// FuzzMultipartFilename checks that a file part's filename is keyed
// exactly as sent (Part.FileName's base name made "invoices/a.pdf" and
// "a.pdf" one key): two filenames share a key only when they are equal,
// and the canonical body holds the filename itself. Seeds:
// testdata/fuzz/FuzzMultipartFilename and f.Add below.
func FuzzMultipartFilename(f *testing.F) {
	f.Add("invoices/a.pdf", "a.pdf", []byte("%PDF"))
	f.Add("../../a.pdf", "a.pdf", []byte(""))
	f.Add("caf\u00e9.pdf", "cafe\u0301.pdf", []byte("x"))
	f.Add(`c:\tmp\a.pdf`, `a "quoted".pdf`, []byte("x"))
	r := &Route{Name: "upload", Key: KeySpec{Scope: []Scope{}}}
	d := &Deriver{Secret: []byte("fuzz")}
	f.Fuzz(func(t *testing.T, nameA, nameB string, content []byte) {
		keyA, okA := fileKey(t, d, r, nameA, content)
		keyB, okB := fileKey(t, d, r, nameB, content)
		if okA && okB && (keyA == keyB) != (nameA == nameB) {
			t.Fatalf("filenames %q and %q: same key = %v", nameA, nameB, keyA == keyB)
		}
	})
}

// fileKey derives the key of a one-file multipart body; ok is false when
// the filename cannot be sent (empty, not UTF-8, or not encodable).
func fileKey(t *testing.T, d *Deriver, r *Route, filename string, content []byte) (string, bool) {
	t.Helper()
	if filename == "" || !utf8.ValidString(filename) {
		return "", false
	}
	disp := mime.FormatMediaType("form-data", map[string]string{"name": "file", "filename": filename})
	if disp == "" {
		return "", false
	}
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	pw, err := w.CreatePart(textproto.MIMEHeader{"Content-Disposition": {disp}})
	if err != nil {
		t.Fatal(err)
	}
	pw.Write(content)
	w.Close()
	it, err := d.Derive(r, Input{ContentType: w.FormDataContentType(), Body: b.Bytes()})
	if err != nil {
		t.Fatalf("Derive of filename %q (%s): %v", filename, disp, err)
	}
	if got := gjson.GetBytes(it.Doc, "file.filename").String(); got != filename {
		t.Fatalf("filename %q is keyed as %q", filename, got)
	}
	return it.Key, true
}
