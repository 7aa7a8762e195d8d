package rules

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/tidwall/gjson"
)

// Inject puts the derived key into the outbound request, in a field the
// provider stores and can be searched by, for APIs without idempotency
// keys: exactly one of Header, Body, Form and Append is set. The value
// written is Template expanded with {{key}} ("{{key}}" when the rule gives
// no template). The injected field is never part of the key: a retry that
// already carries it keys like one that does not.
type Inject struct {
	// Header is a canonical header name (S3 X-Amz-Meta-Toolguard-Key).
	Header string
	// Body is a dotted path of plain names into a JSON object body
	// (Postmark Metadata.toolguard_key); missing objects are created.
	Body string
	// Form is a form field name, taken literally (Stripe
	// metadata[toolguard_key], Mailgun v:toolguard_key); in a
	// multipart/form-data body it is a field part.
	Form string
	// Append is a string field, a dotted path into a JSON body or a form
	// field name, that Template is appended to (a hidden marker in a
	// GitHub issue body). A value that already ends with a marker of any
	// key has it removed before the key is derived and replaced on send.
	Append string
	// Template is the value, with exactly one {{key}} and no other
	// reference.
	Template *Template
}

// Conditional is a header set on every outbound request so that the
// provider itself refuses a second effect (S3 If-None-Match: * on
// PutObject). The provider's refusal (412) is how a duplicate shows.
type Conditional struct {
	Header string // canonical
	Value  string
}

// defaultInjectTemplate is the value of an Inject without a template.
var defaultInjectTemplate, _ = ParseTemplate("{{key}}")

// value is the injected text for key.
func (in *Inject) value(key string) string {
	v, _ := in.Template.Expand(Values{Key: key}, false)
	return v
}

// Apply writes the route's injection and conditional header into an
// outbound request's header h and body, and returns the body to send. It
// runs on every send, re-sends and recovery included. The body is
// returned unchanged when the route injects into a header or nothing; a
// body that cannot take the field gives an error wrapping ErrInvalidBody.
func (r *Route) Apply(h http.Header, contentType string, body []byte, key string) ([]byte, error) {
	if c := r.Conditional; c != nil {
		h.Set(c.Header, c.Value)
	}
	in := r.Inject
	if in == nil {
		return body, nil
	}
	val := in.value(key)
	switch {
	case in.Header != "":
		h.Set(in.Header, val)
		return body, nil
	case in.Body != "":
		if isForm(contentType) {
			return nil, fmt.Errorf("%w: inject.body %q needs a JSON body (use inject.form for forms)", ErrInvalidBody, in.Body)
		}
		return setJSONPath(orEmptyObject(body), splitDotted(in.Body), val)
	case in.Form != "" && isMultipart(contentType):
		return setMultipartField(body, contentType, in.Form, val)
	case in.Form != "":
		if !isForm(contentType) {
			return nil, fmt.Errorf("%w: inject.form %q needs a form body (%s)", ErrInvalidBody, in.Form, formType)
		}
		return setFormField(body, in.Form, val)
	}
	return in.appendMarker(contentType, body, val)
}

// appendMarker appends val to the Append field, replacing a marker that
// is already there.
func (in *Inject) appendMarker(contentType string, body []byte, val string) ([]byte, error) {
	if isForm(contentType) {
		vals, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, fmt.Errorf("%w: inject.append: %v", ErrInvalidBody, err)
		}
		return setFormField(body, in.Append, in.stripMarker(vals.Get(in.Append))+val)
	}
	res := gjson.GetBytes(body, escapeDotted(in.Append))
	if res.Exists() && res.Type != gjson.String {
		return nil, fmt.Errorf("%w: inject.append: %q is not a string", ErrInvalidBody, in.Append)
	}
	return setJSONPath(orEmptyObject(body), splitDotted(in.Append), in.stripMarker(res.String())+val)
}

// stripMarker removes a trailing marker of any key from s.
func (in *Inject) stripMarker(s string) string {
	pre, post := in.markerParts()
	if !strings.HasSuffix(s, post) {
		return s
	}
	rest := s[:len(s)-len(post)]
	if len(rest) < 64 || !isLowerHex(rest[len(rest)-64:]) {
		return s
	}
	rest = rest[:len(rest)-64]
	if !strings.HasSuffix(rest, pre) {
		return s
	}
	return rest[:len(rest)-len(pre)]
}

// markerParts splits the template around its {{key}}.
func (in *Inject) markerParts() (pre, post string) {
	for i, p := range in.Template.parts {
		if p.ref == refKey {
			for _, q := range in.Template.parts[:i] {
				pre += q.text
			}
			for _, q := range in.Template.parts[i+1:] {
				post += q.text
			}
			return pre, post
		}
	}
	return "", ""
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if !(s[i] >= '0' && s[i] <= '9' || s[i] >= 'a' && s[i] <= 'f') {
			return false
		}
	}
	return true
}

// stripInjected removes a marker from the Append field of the canonical
// document doc (appending to dst), so that a retry that carries the
// marker keys like the first call. Other kinds leave doc as it is: their
// field is kept out of the key by the key spec (see parse).
func (in *Inject) stripInjected(dst, doc []byte) []byte {
	if in == nil || in.Append == "" {
		return append(dst, doc...)
	}
	res := gjson.GetBytes(doc, escapeDotted(in.Append))
	if res.Type != gjson.String || res.Index <= 0 {
		return append(dst, doc...)
	}
	s := res.String()
	stripped := in.stripMarker(s)
	if stripped == s {
		return append(dst, doc...)
	}
	dst = append(dst, doc[:res.Index]...)
	dst = appendString(dst, stripped)
	return append(dst, doc[res.Index+len(res.Raw):]...)
}

func isForm(contentType string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	return strings.EqualFold(strings.TrimSpace(mt), formType)
}

func orEmptyObject(body []byte) []byte {
	if len(strings.TrimSpace(string(body))) == 0 {
		return []byte("{}")
	}
	return body
}

// splitDotted splits a dotted path of plain names.
func splitDotted(p string) []string { return strings.Split(p, ".") }

// escapeDotted makes a dotted path of plain names a gjson path.
func escapeDotted(p string) string {
	parts := splitDotted(p)
	for i, s := range parts {
		parts[i] = gjson.Escape(s)
	}
	return strings.Join(parts, ".")
}

// setJSONPath sets the string at path in a JSON object body, creating the
// objects on the way, and keeps the rest of the body byte for byte.
func setJSONPath(body []byte, path []string, value string) ([]byte, error) {
	if len(path) == 1 {
		return setJSONField(body, path[0], value)
	}
	child := gjson.GetBytes(body, gjson.Escape(path[0]))
	if !child.Exists() {
		inner, err := setJSONPath([]byte("{}"), path[1:], value)
		if err != nil {
			return nil, err
		}
		return setJSONRaw(body, path[0], inner)
	}
	if !child.IsObject() || child.Index <= 0 {
		return nil, fmt.Errorf("%w: set field %q: not a JSON object", ErrInvalidBody, path[0])
	}
	inner, err := setJSONPath([]byte(child.Raw), path[1:], value)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(body)+len(inner)-len(child.Raw))
	out = append(out, body[:child.Index]...)
	out = append(out, inner...)
	return append(out, body[child.Index+len(child.Raw):]...), nil
}

// setJSONRaw adds the member field (absent from body) with a raw JSON
// value.
func setJSONRaw(body []byte, field string, raw []byte) ([]byte, error) {
	// Set a placeholder string, then replace its encoding with raw.
	const ph = "\x00toolguard-placeholder\x00"
	out, err := setJSONField(body, field, ph)
	if err != nil {
		return nil, err
	}
	enc := appendString(nil, ph)
	i := strings.Index(string(out), string(enc))
	return append(append(out[:i:i], raw...), out[i+len(enc):]...), nil
}

// checkWritable refuses, before anything is journaled, a body that the
// fields toolguard writes on send (native_idempotency.body, inject) cannot
// be written into, so that the failure is the agent's 400 and not a send
// that fails after the step was claimed.
func (r *Route) checkWritable(contentType string, doc []byte) error {
	if ni := r.NativeIdempotency; ni != nil && ni.Body != "" && (r.Key.RawContent || isMultipart(contentType)) {
		return fmt.Errorf("%w: route %s/%s sends its idempotency key in a JSON or form body field", ErrInvalidBody, r.apiName(), r.Name)
	}
	return r.Inject.check(r, contentType, doc)
}

// check refuses, before anything is journaled, a request whose body
// cannot take the injected field: inject.body needs a JSON object body,
// inject.form a form or a multipart/form-data body, inject.append a JSON
// or form body whose field is a string or absent. doc is the canonical body.
func (in *Inject) check(r *Route, contentType string, doc []byte) error {
	if in == nil || in.Header != "" {
		return nil
	}
	form := isForm(contentType)
	var what string
	switch {
	case in.Form != "" && isMultipart(contentType) && !r.Key.RawContent:
		// a field part is added to the multipart body
	case r.Key.RawContent || isMultipart(contentType):
		what = "a JSON or form body"
	case in.Body != "" && (form || !isObject(doc)):
		what = "a JSON object body"
	case in.Form != "" && !form:
		what = "a form body (" + formType + ")"
	case in.Append != "" && !form && !isObject(doc):
		what = "a JSON object or form body"
	case in.Append != "":
		if res := gjson.GetBytes(doc, escapeDotted(in.Append)); res.Exists() && res.Type != gjson.String {
			return fmt.Errorf("%w: route %s/%s: inject.append: %q is not a string", ErrInvalidBody, r.apiName(), r.Name, in.Append)
		}
	}
	if what != "" {
		return fmt.Errorf("%w: route %s/%s injects the key into %s", ErrInvalidBody, r.apiName(), r.Name, what)
	}
	return nil
}

func isMultipart(contentType string) bool {
	mt, _, _ := strings.Cut(contentType, ";")
	return strings.EqualFold(strings.TrimSpace(mt), multipartType)
}

// isObject reports whether a canonical document is an object (an empty
// body is null, which an injection turns into one).
func isObject(doc []byte) bool {
	return len(doc) > 0 && (doc[0] == '{' || string(doc) == "null")
}
