package rules

import (
	"fmt"
	"net/http"
	"net/textproto"
	"strings"

	"github.com/tidwall/gjson"
)

// Extract reads the value from a response: the body path's string form
// (compact JSON for an object or array) or the header's first value. It
// returns "" when the value is missing or the Extractor is zero.
func (x Extractor) Extract(h http.Header, body []byte) string {
	switch x.Source {
	case SourceBody:
		return gjson.GetBytes(body, x.Path).String()
	case SourceHeader:
		return h.Get(x.Path)
	}
	return ""
}

// String returns the extractor as written in a rule file: body:PATH or
// header:Name; "" for the zero Extractor.
func (x Extractor) String() string {
	switch x.Source {
	case SourceBody:
		return "body:" + x.Path
	case SourceHeader:
		return "header:" + x.Path
	}
	return ""
}

// ParseExtractor parses body:<gjson path> or header:<name>. The header name
// is canonicalized.
func ParseExtractor(s string) (Extractor, error) {
	src, arg, ok := strings.Cut(s, ":")
	switch {
	case ok && src == "body":
		if err := validPath(arg); err != nil {
			return Extractor{}, fmt.Errorf("invalid gjson path %q: %v", arg, err)
		}
		return Extractor{Source: SourceBody, Path: arg}, nil
	case ok && src == "header":
		if !validToken(arg) {
			return Extractor{}, fmt.Errorf("invalid header name %q", arg)
		}
		return Extractor{Source: SourceHeader, Path: textproto.CanonicalMIMEHeaderKey(arg)}, nil
	}
	return Extractor{}, fmt.Errorf("want body:<gjson path> or header:<name> (got %q)", s)
}

// validToken reports whether s is an RFC 9110 token, as header names are.
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		b := s[i]
		if b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' {
			continue
		}
		if strings.IndexByte("!#$%&'*+-.^_`|~", b) < 0 {
			return false
		}
	}
	return true
}
