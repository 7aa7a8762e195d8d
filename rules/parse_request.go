package rules

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// This file parses the requests of lookups and verifications: "METHOD
// URL-template", whose references must have a value when it is sent.

// request parses "METHOD URL-template" and checks the URL is absolute
// http(s) and its references can be filled.
func (d *decoder) request(r *Route, e entry, name string, inLookup bool) Request {
	s, ok := d.str(e.val, name)
	if !ok {
		return Request{}
	}
	method, rest, _ := strings.Cut(s, " ")
	if !validMethod(method) {
		d.errorf(e.val, "%s: want \"METHOD URL\" with an uppercase method (got %q)", name, s)
		return Request{}
	}
	raw := strings.TrimLeft(rest, " ")
	off := len(s) - len(raw)
	t, err := ParseTemplate(raw)
	if err != nil {
		var te *TemplateError
		if errors.As(err, &te) {
			d.errs.add(d.at(e.val, off+te.Offset), "%s: %s", name, te.Msg)
		}
		return Request{}
	}
	if err := checkURL(t.sample()); err != nil {
		d.errorf(e.val, "%s: %v", name, err)
	}
	for _, p := range t.refs() {
		if msg := d.checkRef(r, p, inLookup); msg != "" {
			if strings.HasPrefix(name, "verify.before") {
				msg = strings.Replace(msg, "before the lookup answers", "before the call is sent", 1)
			}
			d.errs.add(d.at(e.val, off+p.off), "%s: %s", name, msg)
		}
	}
	t.markRest(r.segs)
	return Request{Method: method, URL: t}
}

func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("invalid url %q: %v", s, errors.Unwrap(err))
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("url %q is not an absolute http(s) url", s)
	}
	return nil
}

// checkRef says what is wrong with a reference in a route's template.
func (d *decoder) checkRef(r *Route, p tmplPart, inLookup bool) string {
	switch {
	case p.ref == refPath && r.segs != nil && !contains(wildcards(r.segs), p.text):
		if ws := wildcards(r.segs); len(ws) > 0 {
			return fmt.Sprintf("%s: %q is not a wildcard of %q (want one of %s)", p, p.text, r.Pattern, strings.Join(ws, ", "))
		}
		return fmt.Sprintf("%s: %q has no wildcards", p, r.Pattern)
	case p.ref == refHeader:
		return fmt.Sprintf("%s: response headers can be read only in operation_id", p)
	case inLookup && (p.ref == refOperationID || p.ref == refResponse):
		return fmt.Sprintf("%s is not known before the lookup answers (use {{key}}, {{path.NAME}} or {{body.PATH}})", p)
	case !inLookup && p.ref == refOperationID && r.OperationID.Source == SourceNone &&
		(r.Lookup == nil || r.Lookup.OperationID.Source == SourceNone):
		return fmt.Sprintf("%s needs operation_id on the route (or on its lookup)", p)
	}
	return ""
}
