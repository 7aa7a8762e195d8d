package rules

import (
	"fmt"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"

	"github.com/tidwall/gjson"
)

// refKind is what a template placeholder refers to.
type refKind uint8

const (
	refNone        refKind = iota // literal text
	refKey                        // {{key}}
	refOperationID                // {{operation_id}}
	refPath                       // {{path.NAME}}
	refBody                       // {{body.PATH}}
	refResponse                   // {{response.PATH}}
	refHeader                     // {{header.NAME}}: a response header, in operation_id only
)

// Template is a string with {{...}} placeholders: {{key}},
// {{operation_id}}, {{path.NAME}} (a wildcard of the route's pattern),
// {{body.PATH}} (a gjson path into the canonical request body) and
// {{response.PATH}} (into the stored response body).
type Template struct {
	src   string
	parts []tmplPart
}

type tmplPart struct {
	ref   refKind
	text  string // literal text, or the NAME / PATH of a reference
	query bool   // the part comes after the URL's '?'
	off   int    // offset of the part in src
	// rest: a {{path.NAME}} of a {NAME...} wildcard, whose value is
	// several path segments: in a URL path each is escaped and the '/'
	// between them kept.
	rest bool
}

// Values are what a template can refer to. Body and Response are
// canonical JSON documents (Intent.Doc, a stored response body).
type Values struct {
	Key, OperationID string
	Path             map[string]string
	Body, Response   []byte
	// Header holds the response headers {{header.NAME}} reads.
	Header http.Header
	// Stored holds the request values a step keeps for its recovery (see
	// RecoveryValues), read when Body (or Path) is not at hand.
	Stored map[string]string
}

// ParseTemplate parses s. Unknown references, empty paths and unterminated
// placeholders give a *TemplateError. Whitespace inside braces is ignored.
func ParseTemplate(s string) (*Template, error) {
	t := &Template{src: s}
	query := false
	for off := 0; off < len(s); {
		open := strings.Index(s[off:], "{{")
		if open < 0 {
			t.addLiteral(s[off:], off, &query)
			break
		}
		open += off
		t.addLiteral(s[off:open], off, &query)
		end := strings.Index(s[open+2:], "}}")
		if end < 0 {
			return nil, &TemplateError{Offset: open, Msg: "unterminated {{"}
		}
		end += open + 2
		p, err := parseRef(s[open+2:end], open)
		if err != nil {
			return nil, err
		}
		p.query = query
		t.parts = append(t.parts, p)
		off = end + 2
	}
	return t, nil
}

func (t *Template) addLiteral(lit string, off int, query *bool) {
	if lit == "" {
		return
	}
	t.parts = append(t.parts, tmplPart{text: lit, query: *query, off: off})
	*query = *query || strings.IndexByte(lit, '?') >= 0
}

func parseRef(inner string, off int) (tmplPart, error) {
	ref := strings.TrimSpace(inner)
	p := tmplPart{off: off}
	switch {
	case strings.Contains(ref, "{{"):
		return p, &TemplateError{Offset: off, Msg: "unterminated {{"}
	case ref == "key":
		p.ref = refKey
	case ref == "operation_id":
		p.ref = refOperationID
	case strings.HasPrefix(ref, "path."):
		p.ref, p.text = refPath, ref[len("path."):]
		if p.text == "" {
			return p, &TemplateError{Offset: off, Msg: "{{path.}} needs a wildcard name"}
		}
	case strings.HasPrefix(ref, "body."), strings.HasPrefix(ref, "response."):
		p.ref, p.text = refBody, ref[len("body."):]
		if strings.HasPrefix(ref, "response.") {
			p.ref, p.text = refResponse, ref[len("response."):]
		}
		if err := validPath(p.text); err != nil {
			return p, &TemplateError{Offset: off, Msg: fmt.Sprintf("{{%s}}: invalid gjson path: %v", ref, err)}
		}
	case strings.HasPrefix(ref, "header."):
		p.ref, p.text = refHeader, textproto.CanonicalMIMEHeaderKey(ref[len("header."):])
		if !validToken(ref[len("header."):]) {
			return p, &TemplateError{Offset: off, Msg: fmt.Sprintf("{{%s}}: invalid header name", ref)}
		}
	default:
		return p, &TemplateError{Offset: off, Msg: fmt.Sprintf("unknown reference {{%s}} (want key, operation_id, path.NAME, body.PATH or response.PATH)", ref)}
	}
	return p, nil
}

// String returns the template as it was written.
func (t *Template) String() string { return t.src }

// Expand substitutes the values. With escapeURL, a value before the URL's
// first '?' is escaped as a path segment (url.PathEscape: '/' becomes %2F;
// the value of a {NAME...} wildcard segment by segment, its '/' kept) and
// a value after it as a query component (url.QueryEscape). A reference
// whose value is missing, null or empty gives an error wrapping
// ErrMissingValue. A JSON object or array value is substituted as compact
// JSON.
func (t *Template) Expand(v Values, escapeURL bool) (string, error) {
	var b strings.Builder
	b.Grow(len(t.src) + 64)
	for _, p := range t.parts {
		if p.ref == refNone {
			b.WriteString(p.text)
			continue
		}
		val := p.value(v)
		if val == "" {
			return "", fmt.Errorf("expand %s: %w", p, ErrMissingValue)
		}
		switch {
		case !escapeURL:
		case p.query:
			val = url.QueryEscape(val)
		case p.rest:
			val = escapeSegments(val)
		default:
			val = url.PathEscape(val)
		}
		b.WriteString(val)
	}
	return b.String(), nil
}

// escapeSegments path-escapes each '/'-separated segment of s.
func escapeSegments(s string) string {
	segs := strings.Split(s, "/")
	for i, seg := range segs {
		segs[i] = url.PathEscape(seg)
	}
	return strings.Join(segs, "/")
}

// markRest marks the {{path.NAME}} references to the multi-segment
// wildcards among segs.
func (t *Template) markRest(segs []segment) {
	for i, p := range t.parts {
		if p.ref != refPath {
			continue
		}
		for _, sg := range segs {
			if sg.kind == segMulti && sg.text == p.text {
				t.parts[i].rest = true
			}
		}
	}
}

func (p tmplPart) value(v Values) string {
	switch p.ref {
	case refKey:
		return v.Key
	case refOperationID:
		return v.OperationID
	case refPath:
		return v.pathValue(p.text)
	case refBody:
		return v.body(p.text).String()
	case refResponse:
		return gjson.GetBytes(v.Response, p.text).String()
	case refHeader:
		return v.Header.Get(p.text)
	}
	return ""
}

func (p tmplPart) String() string {
	switch p.ref {
	case refKey:
		return "{{key}}"
	case refOperationID:
		return "{{operation_id}}"
	case refPath:
		return "{{path." + p.text + "}}"
	case refBody:
		return "{{body." + p.text + "}}"
	case refResponse:
		return "{{response." + p.text + "}}"
	case refHeader:
		return "{{header." + p.text + "}}"
	}
	return p.text
}

// refs returns the placeholders of t.
func (t *Template) refs() []tmplPart {
	var rs []tmplPart
	for _, p := range t.parts {
		if p.ref != refNone {
			rs = append(rs, p)
		}
	}
	return rs
}

// sample expands t with a placeholder for every value, to check the shape
// of the URL it makes.
func (t *Template) sample() string {
	var b strings.Builder
	for _, p := range t.parts {
		if p.ref == refNone {
			b.WriteString(p.text)
		} else {
			b.WriteString("x")
		}
	}
	return b.String()
}
