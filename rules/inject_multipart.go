package rules

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/textproto"
	"strings"
)

// setMultipartField returns a multipart/form-data body with the field part
// name set to value: every other part is copied as it came (headers and
// raw bytes, no transfer decoding), a field part of that name is dropped,
// and the field is added last, under the body's own boundary (so the
// request's Content-Type stays right).
func setMultipartField(body []byte, contentType, name, value string) ([]byte, error) {
	_, params, err := mime.ParseMediaType(contentType)
	boundary := params["boundary"]
	if err != nil || boundary == "" {
		return nil, fmt.Errorf("%w: inject.form: multipart body without a boundary", ErrInvalidBody)
	}
	var out bytes.Buffer
	out.Grow(len(body) + len(boundary) + len(name) + len(value) + 96)
	w := multipart.NewWriter(&out)
	if err := w.SetBoundary(boundary); err != nil {
		return nil, fmt.Errorf("%w: inject.form: %v", ErrInvalidBody, err)
	}
	r := multipart.NewReader(bytes.NewReader(body), boundary)
	for {
		p, err := r.NextRawPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: inject.form: read multipart body: %v", ErrInvalidBody, err)
		}
		if p.FormName() == name && p.FileName() == "" {
			continue // a copy of an earlier injection: replaced below
		}
		pw, err := w.CreatePart(textproto.MIMEHeader(p.Header))
		if err != nil {
			return nil, fmt.Errorf("inject.form: write part: %w", err)
		}
		if _, err := io.Copy(pw, p); err != nil {
			return nil, fmt.Errorf("%w: inject.form: read multipart body: %v", ErrInvalidBody, err)
		}
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="`+strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(name)+`"`)
	pw, err := w.CreatePart(h)
	if err != nil {
		return nil, fmt.Errorf("inject.form: write part: %w", err)
	}
	io.WriteString(pw, value)
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("inject.form: close multipart body: %w", err)
	}
	return out.Bytes(), nil
}
