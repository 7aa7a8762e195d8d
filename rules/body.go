package rules

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/tidwall/gjson"
)

// bodyKind is how a request body is read.
type bodyKind uint8

const (
	bodyJSON bodyKind = iota + 1
	bodyForm
	bodyMultipart
	// bodyRaw: bytes of any other type, keyed by their hash (see
	// appendRawContent), never parsed.
	bodyRaw
)

// classify decides how to read body from its declared content type, and
// refuses a body that cannot be what it is declared to be:
//   - application/json and any */*+json type: JSON (which must then parse);
//   - application/x-www-form-urlencoded: a form, unless the body starts
//     (after white space) with '{' or '[': that is JSON sent with a form
//     content type (curl -d does this), which a form parser would read as
//     one key with an empty value, so it is refused;
//   - multipart/form-data: parts (see canon.multipart);
//   - no content type: JSON when the body starts (after white space) with
//     '{' or '['; anything else is raw (a form cannot be told from text);
//   - any other type (application/octet-stream, text/plain, an image):
//     raw, keyed by the hash of its bytes. A body is never refused for its
//     type: a provider may take any.
func classify(contentType string, body []byte) (bodyKind, error) {
	mt, _, _ := strings.Cut(contentType, ";")
	mt = strings.TrimSpace(mt)
	switch {
	case strings.EqualFold(mt, "application/json"),
		len(mt) > 5 && strings.EqualFold(mt[len(mt)-5:], "+json"):
		return bodyJSON, nil
	case strings.EqualFold(mt, formType):
		if looksJSON(body) {
			return 0, fmt.Errorf("%w: the body is declared %s but looks like JSON "+
				"(curl -d sends that content type: send Content-Type: application/json)", ErrInvalidBody, formType)
		}
		return bodyForm, nil
	case strings.EqualFold(mt, multipartType):
		return bodyMultipart, nil
	case mt == "" && looksJSON(body):
		return bodyJSON, nil
	}
	return bodyRaw, nil
}

// formType is the media type of URL-encoded form bodies.
const formType = "application/x-www-form-urlencoded"

func looksJSON(body []byte) bool {
	for _, b := range body {
		switch b {
		case ' ', '\t', '\n', '\r':
			continue
		case '{', '[':
			return true
		}
		return false
	}
	return false
}

// body appends the canonical JSON document of a request body to dst: the
// canonical JSON, a form as an object, or null when the body is empty.
func (c *canon) body(dst []byte, contentType string, body []byte) ([]byte, error) {
	if len(body) == 0 {
		return append(dst, "null"...), nil
	}
	kind, err := classify(contentType, body)
	if err != nil {
		return dst, err
	}
	switch kind {
	case bodyRaw:
		return appendRawContent(dst, contentType, body), nil
	case bodyForm:
		return c.form(dst, bstr(body), "form body")
	case bodyMultipart:
		b, err := multipartBoundary(contentType)
		if err != nil {
			return dst, err
		}
		return c.multipart(dst, b, body)
	}
	return c.canonical(dst, body)
}

// CanonicalBody appends the canonical JSON document of a request body to
// dst, as Derive sees it: JSON canonicalized, a form as an object of sorted
// keys, null for an empty body, a body of any other type (or of none that
// is not JSON) as {"content_sha256", "content_type", "size"}. A body that
// cannot be what its type declares gives ErrInvalidBody.
func CanonicalBody(dst []byte, contentType string, body []byte) ([]byte, error) {
	c := getCanon()
	defer putCanon(c)
	return c.body(dst, contentType, body)
}

// SetBodyField sets the top-level string field of a JSON object or form
// body to value (native_idempotency.body), replacing any value it had, and
// returns the new body. The rest of the body is kept byte for byte. An
// empty body becomes a one-field body of its content type (JSON unless it
// is a form).
func SetBodyField(contentType string, body []byte, field, value string) ([]byte, error) {
	if len(body) == 0 {
		if mt, _, _ := strings.Cut(contentType, ";"); strings.EqualFold(strings.TrimSpace(mt), "application/x-www-form-urlencoded") {
			return []byte(url.QueryEscape(field) + "=" + url.QueryEscape(value)), nil
		}
		return setJSONField([]byte("{}"), field, value)
	}
	kind, err := classify(contentType, body)
	if err != nil {
		return nil, err
	}
	switch kind {
	case bodyForm:
		return setFormField(body, field, value)
	case bodyMultipart:
		return nil, fmt.Errorf("%w: set field %q: a multipart body takes no field (use native_idempotency.header)", ErrInvalidBody, field)
	case bodyRaw:
		return nil, fmt.Errorf("%w: set field %q: a body of type %q takes no field (use native_idempotency.header)", ErrInvalidBody, field, normalMediaType(contentType))
	}
	return setJSONField(body, field, value)
}

func setJSONField(body []byte, field, value string) ([]byte, error) {
	open := 0
	for open < len(body) && strings.IndexByte(" \t\r\n", body[open]) >= 0 {
		open++
	}
	if open == len(body) || body[open] != '{' || !gjson.ValidBytes(body) {
		return nil, fmt.Errorf("%w: set field %q: body is not a JSON object", ErrInvalidBody, field)
	}
	enc := appendString(nil, value)
	if res := gjson.GetBytes(body, gjson.Escape(field)); res.Exists() && res.Index > 0 {
		out := make([]byte, 0, len(body)-len(res.Raw)+len(enc))
		out = append(out, body[:res.Index]...)
		out = append(out, enc...)
		return append(out, body[res.Index+len(res.Raw):]...), nil
	}
	out := make([]byte, 0, len(body)+len(field)+len(enc)+4)
	out = append(out, body[:open+1]...)
	out = appendString(out, field)
	out = append(out, ':')
	out = append(out, enc...)
	if rest := strings.TrimLeft(bstr(body[open+1:]), " \t\r\n"); !strings.HasPrefix(rest, "}") {
		out = append(out, ',')
	}
	return append(out, body[open+1:]...), nil
}

// setFormField replaces the first pair named field, drops any later ones,
// and appends the pair when there was none.
func setFormField(body []byte, field, value string) ([]byte, error) {
	out := make([]byte, 0, len(body)+len(field)+len(value)+2)
	var scratch []byte
	found := false
	for i, seg := range strings.Split(string(body), "&") {
		key, _, _ := strings.Cut(seg, "=")
		var err error
		if scratch, err = unescapeForm(scratch[:0], key, 0, "form body"); err != nil {
			return nil, fmt.Errorf("set field %q: %w", field, err)
		}
		if string(scratch) == field {
			if found {
				continue
			}
			found = true
			seg = key + "=" + url.QueryEscape(value)
		}
		if i > 0 && len(out) > 0 {
			out = append(out, '&')
		}
		out = append(out, seg...)
	}
	if !found {
		if len(out) > 0 {
			out = append(out, '&')
		}
		out = append(out, url.QueryEscape(field)+"="+url.QueryEscape(value)...)
	}
	return out, nil
}
