package rules

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/tidwall/gjson"
)

// Limits of what RequestFields and ShownQuery keep for operators.
const (
	// RequestFieldValueMax is the largest value kept, in bytes; a longer
	// one is cut and ends in "…".
	RequestFieldValueMax = 256
	// RequestFieldsMax is the most fields kept.
	RequestFieldsMax = 64
	// RequestFieldsBytes bounds the paths and values kept, in all.
	RequestFieldsBytes = 8 << 10
	// ShownQueryMax bounds a shown query string, in bytes.
	ShownQueryMax = 2 << 10
)

// RequestFields is what an operator is shown of a request's body before
// approving or resolving it: every leaf of the body as route r reads it
// (JSON, form or multipart, canonicalized), one entry each, Field its gjson
// path and Value its canonical JSON text, the route's redact paths shown as
// "[redacted]". Values are cut at RequestFieldValueMax bytes; past
// RequestFieldsMax fields or RequestFieldsBytes in all, a last entry named
// SummaryOmitted says how many fields were left out. It is nil for an empty
// body or one that does not parse. Credentials are never part of it: they
// travel in headers, which it does not read.
func RequestFields(r *Route, in Input) []KeyField {
	s := scratchPool.Get().(*deriveScratch)
	defer s.release()
	var err error
	if r.Key.RawContent {
		s.doc = appendRawContent(s.doc[:0], in.ContentType, in.Body)
	} else if s.doc, err = s.canon.body(s.doc[:0], in.ContentType, in.Body); err != nil {
		return nil
	}
	red := s.doc
	if len(r.Redact) > 0 {
		s.red = s.strip.redactDoc(s.red[:0], s.doc, r.Redact, nil, r.apiName())
		red = s.red
	}
	root := gjson.ParseBytes(red)
	if root.Type == gjson.Null {
		return nil
	}
	f := fieldList{}
	f.walk("", root)
	return f.done()
}

// fieldList collects leaves within the limits.
type fieldList struct {
	out     []KeyField
	size    int
	omitted int
}

func (f *fieldList) walk(path string, v gjson.Result) {
	if (v.IsObject() || v.IsArray()) && !isFile(v) {
		empty := true
		v.ForEach(func(k, child gjson.Result) bool {
			empty = false
			name := k.String()
			if v.IsObject() {
				name = escapePath(name)
			}
			f.walk(joinField(path, name), child)
			return true
		})
		if !empty {
			return
		}
	}
	f.add(path, v)
}

func (f *fieldList) add(path string, v gjson.Result) {
	if path == "" {
		path = "@this" // a body that is one value
	}
	value := summaryValueMax(v, RequestFieldValueMax)
	if len(f.out) >= RequestFieldsMax || f.size+len(path)+len(value) > RequestFieldsBytes {
		f.omitted++
		return
	}
	f.size += len(path) + len(value)
	f.out = append(f.out, KeyField{Field: strings.Clone(path), Value: value})
}

func (f *fieldList) done() []KeyField {
	if f.omitted > 0 {
		f.out = append(f.out, KeyField{Field: SummaryOmitted, Value: fmt.Sprintf("%d more fields not shown", f.omitted)})
	}
	return f.out
}

// isFile reports whether v is a multipart file part's summary, shown as
// one value.
func isFile(v gjson.Result) bool {
	return v.IsObject() && v.Get("content_sha256").Type == gjson.String && v.Get("filename").Exists()
}

func joinField(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// escapePath escapes the characters gjson gives meaning to in a member
// name, so that the path selects that member.
func escapePath(name string) string {
	if !strings.ContainsAny(name, `.*?|#@\!=<>%`) {
		return name
	}
	var b strings.Builder
	for _, r := range name {
		if strings.ContainsRune(`.*?|#@\!=<>%`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// secretParams are the words that mark a query parameter as a secret: its
// value is never kept. A name matches when one of its words starts or ends
// with one (apikey, accesstoken); exactParams match only whole words.
var (
	secretParams = []string{"key", "token", "secret", "password", "passwd", "signature", "auth", "credential", "session", "cookie"}
	exactParams  = []string{"pwd", "sig", "otp", "code", "pass"}
)

// ShownQuery is the query string kept for operators: in its order, every
// parameter whose name holds a word of a secret (api_key, access_token,
// X-Amz-Signature, password...) with its value replaced by [redacted], values
// cut at RequestFieldValueMax bytes and the whole at ShownQueryMax.
func ShownQuery(raw string) string {
	if raw == "" {
		return ""
	}
	var b strings.Builder
	for part := range strings.SplitSeq(raw, "&") {
		if part == "" {
			continue
		}
		name, value, hasValue := strings.Cut(part, "=")
		if hasValue && isSecretParam(name) {
			value = "[redacted]"
		}
		next := truncate(name, RequestFieldValueMax)
		if hasValue {
			next += "=" + truncate(value, RequestFieldValueMax)
		}
		if b.Len()+len(next)+1 > ShownQueryMax {
			b.WriteString("&…")
			break
		}
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		b.WriteString(next)
	}
	return b.String()
}

// isSecretParam reports whether a query parameter's name (decoded, any
// case, split at non-letters) holds a word of secretParams, or runs one on
// (apikey, accesstoken).
func isSecretParam(name string) bool {
	if n, err := url.QueryUnescape(name); err == nil {
		name = n
	}
	name = strings.ToLower(name)
	words := strings.FieldsFunc(name, func(r rune) bool { return r < 'a' || r > 'z' })
	for _, w := range words {
		if slices.Contains(exactParams, w) {
			return true
		}
		for _, s := range secretParams {
			if strings.HasPrefix(w, s) || strings.HasSuffix(w, s) {
				return true
			}
		}
	}
	return false
}
