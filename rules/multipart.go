package rules

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"slices"
	"unicode/utf8"
)

// multipartType is the media type of multipart form bodies.
const multipartType = "multipart/form-data"

// maxFieldPart bounds one non-file part's value: a field is text, and its
// value is held whole (a file part is only hashed, as it streams).
const maxFieldPart = 1 << 20

// mpPart is one part of a multipart body as the key sees it: its name and
// canonical JSON value.
type mpPart struct {
	name string
	val  []byte
}

// multipart appends the canonical JSON document of a multipart/form-data
// body: an object of part name → value, sorted as in CanonicalJSON. A
// field part's value is its text; a file part (one with a filename) is
// {"content_sha256", "content_type", "filename", "size"}, its content
// hashed as it is read, never copied. The filename is the
// Content-Disposition parameter as sent, directories and all (see
// partFilename). A name given several times maps to
// an array of its values in body order. A body that is not valid
// multipart, or a field that is not UTF-8 text, gives ErrInvalidBody.
func (c *canon) multipart(dst []byte, boundary string, body []byte) ([]byte, error) {
	mr := multipart.NewReader(bytes.NewReader(body), boundary)
	var parts []mpPart
	h := sha256.New()
	for {
		p, err := mr.NextRawPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return dst, fmt.Errorf("%w: multipart body: %v", ErrInvalidBody, err)
		}
		name, filename := p.FormName(), partFilename(p)
		switch {
		case name == "":
			return dst, fmt.Errorf("%w: multipart body: a part has no form-data name", ErrInvalidBody)
		case !utf8.ValidString(name) || !utf8.ValidString(filename) || !utf8.ValidString(p.Header.Get("Content-Type")):
			return dst, fmt.Errorf("%w: multipart part %q: a name, filename or content type is not UTF-8 text", ErrInvalidBody, name)
		}
		val, err := partValue(p, filename, h)
		if err != nil {
			return dst, fmt.Errorf("%w: multipart part %q: %v", ErrInvalidBody, name, err)
		}
		parts = append(parts, mpPart{name: name, val: val})
	}
	if len(parts) == 0 {
		return dst, fmt.Errorf("%w: multipart body has no parts", ErrInvalidBody)
	}
	slices.SortStableFunc(parts, func(a, b mpPart) int { return compareKeys(sbytes(a.name), sbytes(b.name)) })
	return appendParts(dst, parts), nil
}

// partFilename is the filename parameter of a part's Content-Disposition
// exactly as sent (MIME quoting and RFC 2231 encoding undone), "" when
// there is none. Part.FileName would give its base name, and
// "invoices/a.pdf", "../../a.pdf" and "a.pdf" would share a key.
func partFilename(p *multipart.Part) string {
	_, params, err := mime.ParseMediaType(p.Header.Get("Content-Disposition"))
	if err != nil {
		return ""
	}
	return params["filename"]
}

// partValue reads one part: a field's text as a JSON string, a file's
// description as a JSON object. filename is partFilename(p).
func partValue(p *multipart.Part, filename string, h interface {
	io.Writer
	Sum([]byte) []byte
	Reset()
}) ([]byte, error) {
	if filename == "" {
		text, err := io.ReadAll(io.LimitReader(p, maxFieldPart+1))
		switch {
		case err != nil:
			return nil, err
		case len(text) > maxFieldPart:
			return nil, fmt.Errorf("field longer than %d bytes (send it as a file part)", maxFieldPart)
		case !utf8.Valid(text):
			return nil, errors.New("field is not UTF-8 text")
		}
		return appendString(nil, bstr(text)), nil
	}
	h.Reset()
	n, err := io.Copy(h, p)
	if err != nil {
		return nil, err
	}
	ct := normalMediaType(p.Header.Get("Content-Type"))
	if ct == "" {
		ct = "application/octet-stream" // RFC 7578 4.4
	}
	v := []byte(`{"content_sha256":"`)
	v = hex.AppendEncode(v, h.Sum(nil))
	v = append(v, `","content_type":`...)
	v = appendString(v, ct)
	v = append(v, `,"filename":`...)
	v = appendString(v, filename)
	v = append(v, `,"size":`...)
	v = fmt.Appendf(v, "%d}", n)
	return v, nil
}

// appendParts writes sorted parts as an object; repeated names become an
// array.
func appendParts(dst []byte, parts []mpPart) []byte {
	dst = append(dst, '{')
	for i := 0; i < len(parts); {
		j := i + 1
		for j < len(parts) && parts[j].name == parts[i].name {
			j++
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, parts[i].name)
		dst = append(dst, ':')
		if j-i == 1 {
			dst = append(dst, parts[i].val...)
		} else {
			dst = append(dst, '[')
			for k := i; k < j; k++ {
				if k > i {
					dst = append(dst, ',')
				}
				dst = append(dst, parts[k].val...)
			}
			dst = append(dst, ']')
		}
		i = j
	}
	return append(dst, '}')
}

// multipartBoundary returns the boundary of a multipart/form-data
// content type, or an error wrapping ErrInvalidBody.
func multipartBoundary(contentType string) (string, error) {
	_, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return "", fmt.Errorf("%w: content type %q: %v", ErrInvalidBody, contentType, err)
	}
	b := params["boundary"]
	if b == "" {
		return "", fmt.Errorf("%w: %s without a boundary", ErrInvalidBody, multipartType)
	}
	return b, nil
}

// appendRawContent appends the canonical document of a body keyed as
// bytes: {"content_sha256", "content_type", "size"}, the type as sent
// (normalised when it parses), "" when there is none.
func appendRawContent(dst []byte, contentType string, body []byte) []byte {
	contentType = normalMediaType(contentType)
	sum := sha256.Sum256(body)
	dst = append(dst, `{"content_sha256":"`...)
	dst = hex.AppendEncode(dst, sum[:])
	dst = append(dst, `","content_type":`...)
	dst = appendString(dst, contentType)
	return fmt.Appendf(dst, `,"size":%d}`, len(body))
}

// normalMediaType lower-cases a media type and its parameter names and
// formats it canonically, or returns it as sent when it does not parse.
func normalMediaType(ct string) string {
	if mt, params, err := mime.ParseMediaType(ct); err == nil {
		if f := mime.FormatMediaType(mt, params); f != "" {
			return f
		}
	}
	return ct
}
