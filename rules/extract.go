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
	case SourceTemplate:
		// A composite id is whole or absent: a missing part gives "".
		v, err := x.Template.Expand(Values{Response: body, Header: h}, false)
		if err != nil {
			return ""
		}
		return v
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
	case SourceTemplate:
		return x.Template.String()
	}
	return ""
}

// ParseExtractor parses body:<gjson path>, header:<name> (canonicalized)
// or a template such as "{{response.channel}}:{{response.ts}}", whose
// references must all be {{response.PATH}} or {{header.NAME}}.
func ParseExtractor(s string) (Extractor, error) {
	if strings.Contains(s, "{{") {
		return parseExtractorTemplate(s)
	}
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
	return Extractor{}, fmt.Errorf("want body:<gjson path>, header:<name> or a {{response.PATH}} template (got %q)", s)
}

func parseExtractorTemplate(s string) (Extractor, error) {
	t, err := ParseTemplate(s)
	if err != nil {
		return Extractor{}, err
	}
	refs := t.refs()
	for _, p := range refs {
		if p.ref != refResponse && p.ref != refHeader {
			return Extractor{}, fmt.Errorf("template %q: %s cannot be read from an answer (want {{response.PATH}} or {{header.NAME}})", s, p)
		}
	}
	if len(refs) == 0 {
		return Extractor{}, fmt.Errorf("template %q has no reference", s)
	}
	return Extractor{Source: SourceTemplate, Template: t}, nil
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
