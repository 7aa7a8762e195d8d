package rules

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// ErrorStyle is the shape in which toolguard's own refusals on an API's
// routes reach the agent.
type ErrorStyle uint8

const (
	// ErrorsProblem: RFC 9457 application/problem+json (the default).
	ErrorsProblem ErrorStyle = iota
	// ErrorsStripe: Stripe's {"error": {"type", "code", "message"}} with
	// the Stripe-Should-Retry header.
	ErrorsStripe
	// ErrorsJSON: a JSON template of the rule file's own.
	ErrorsJSON
)

var errorStyleNames = [...]string{"problem", "stripe", "json"}

func (s ErrorStyle) String() string {
	if int(s) < len(errorStyleNames) {
		return errorStyleNames[s]
	}
	return fmt.Sprintf("errors(%d)", s)
}

// ParseErrorStyle parses problem, stripe or json.
func ParseErrorStyle(s string) (ErrorStyle, error) {
	for i, n := range errorStyleNames {
		if n == s {
			return ErrorStyle(i), nil
		}
	}
	return 0, fmt.Errorf("unknown error format %q (want problem, stripe or json)", s)
}

// ErrorFormat is an API's errors setting. Its zero value is problem+json.
type ErrorFormat struct {
	Style ErrorStyle
	// Template is the body of ErrorsJSON, with {{type}}, {{title}},
	// {{detail}} and {{key}} inside JSON strings, and {{status}} (the HTTP
	// status, a JSON number) anywhere a number may stand; "" for other
	// styles.
	Template string
}

// errorTemplateRef matches one placeholder of an error template.
var errorTemplateRef = regexp.MustCompile(`\{\{\s*([A-Za-z_]*)\s*\}\}`)

// errorTemplateNames are the values an error template may use.
var errorTemplateNames = []string{"type", "title", "detail", "key", "status"}

// RenderError fills an ErrorsJSON template: each placeholder becomes its
// value escaped as the inside of a JSON string (the template puts the
// quotes), so no value can change the document's shape; {{status}} becomes
// the status's digits (0 when vals holds no number there), a JSON number
// or, inside quotes, a string.
func (f ErrorFormat) RenderError(vals map[string]string) []byte {
	out := errorTemplateRef.ReplaceAllStringFunc(f.Template, func(m string) string {
		name := errorTemplateRef.FindStringSubmatch(m)[1]
		if name == "status" {
			if n, err := strconv.Atoi(vals[name]); err == nil && n >= 0 {
				return strconv.Itoa(n)
			}
			return "0"
		}
		b, _ := json.Marshal(vals[name]) // a string always marshals
		return string(b[1 : len(b)-1])
	})
	return []byte(out)
}

// checkErrorTemplate says what is wrong with an error template: an unknown
// placeholder, or a body that is not a JSON object once filled.
func checkErrorTemplate(t string) (off int, msg string) {
	for _, m := range errorTemplateRef.FindAllStringSubmatchIndex(t, -1) {
		name := t[m[2]:m[3]]
		if !contains(errorTemplateNames, name) {
			return m[0], fmt.Sprintf("unknown placeholder {{%s}} (want {{type}}, {{title}}, {{detail}}, {{key}} or {{status}})", name)
		}
	}
	if i := strings.Index(errorTemplateRef.ReplaceAllString(t, ""), "{{"); i >= 0 {
		return 0, "unterminated or malformed placeholder (want {{type}}, {{title}}, {{detail}}, {{key}} or {{status}})"
	}
	sample := ErrorFormat{Style: ErrorsJSON, Template: t}.RenderError(map[string]string{
		"type": "urn:toolguard:in-progress", "title": `a "title"`, "detail": "a detail\nline", "key": "k", "status": "409"})
	var v map[string]any
	if err := json.Unmarshal(sample, &v); err != nil {
		return 0, fmt.Sprintf("not a JSON object once filled (placeholders go inside JSON strings, {{status}} where a number may stand): %v", err)
	}
	return 0, ""
}

// errorFormat reads an api's errors setting: a style name, or a mapping
// {format: json, template: '...'}.
func (d *decoder) errorFormat(e entry) ErrorFormat {
	if _, isMap := e.val.(*ast.MappingNode); !isMap {
		s, ok := d.str(e.val, "errors")
		if !ok {
			return ErrorFormat{}
		}
		st, err := ParseErrorStyle(s)
		if err != nil {
			d.errorf(e.val, "errors: %v", err)
		} else if st == ErrorsJSON {
			d.errorf(e.val, "errors: format json needs a template (errors: {format: json, template: '...'})")
		}
		return ErrorFormat{Style: st}
	}
	fs, ok := d.mapping(e.val, "errors", "format", "template")
	if !ok {
		return ErrorFormat{}
	}
	var f ErrorFormat
	if x, ok := d.require(e.node, "errors", fs, "format"); ok {
		if s, ok := d.str(x.val, "errors.format"); ok {
			st, err := ParseErrorStyle(s)
			if err != nil {
				d.errorf(x.val, "errors.format: %v", err)
			}
			f.Style = st
		}
	}
	x, hasTemplate := fs["template"]
	switch {
	case hasTemplate && f.Style != ErrorsJSON:
		d.errorf(x.node, "errors.template: only format json takes a template (%s has a fixed shape)", f.Style)
	case !hasTemplate && f.Style == ErrorsJSON:
		d.errorf(e.node, "errors: format json needs a template")
	case hasTemplate:
		if t, ok := d.str(x.val, "errors.template"); ok {
			if off, msg := checkErrorTemplate(t); msg != "" {
				d.errs.add(d.at(x.val, off), "errors.template: %s", msg)
			}
			f.Template = t
		}
	}
	return f
}
