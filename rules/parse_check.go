package rules

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"
)

// This file parses the parts of a route that talk to the external system
// again: lookup, verify, their requests and expectations.

func (d *decoder) lookup(r *Route, e entry) *Lookup {
	fs, ok := d.mapping(e.val, "lookup", "request", "found", "absent", "operation_id", "answer", "settle", "rate", "next")
	if !ok {
		return nil
	}
	l := &Lookup{}
	if x, ok := fs["operation_id"]; ok {
		l.OperationID = d.extractor(x, "lookup.operation_id")
	}
	if x, ok := d.require(e.node, "lookup", fs, "request"); ok {
		l.Request = d.request(r, x, "lookup.request", true)
	}
	if x, ok := fs["found"]; ok {
		l.Found = d.expectation(x, "lookup.found")
	} else {
		d.errorf(e.node, "lookup: missing field \"found\" (what an answer that found the effect looks like)")
	}
	if x, ok := fs["absent"]; ok {
		l.Absent = d.expectation(x, "lookup.absent")
	}
	d.lookupExtras(l, fs)
	return l
}

func (d *decoder) verify(r *Route, e entry) *Verify {
	fs, ok := d.mapping(e.val, "verify", "request", "expect", "within", "mode", "before")
	if !ok {
		return nil
	}
	v := &Verify{}
	if x, ok := fs["before"]; ok {
		v.Before = d.check(r, x, "verify.before")
	}
	if x, ok := d.require(e.node, "verify", fs, "request"); ok {
		v.Request = d.request(r, x, "verify.request", false)
	}
	if x, ok := d.require(e.node, "verify", fs, "expect"); ok {
		if exp := d.expectation(x, "verify.expect"); exp != nil {
			v.Expect = *exp
		}
	}
	d.verifyTiming(e, fs, v)
	return v
}

// verifyTiming reads verify's within and mode, shared by routes and MCP
// tools.
func (d *decoder) verifyTiming(e entry, fs map[string]entry, v *Verify) {
	if x, ok := d.require(e.node, "verify", fs, "within"); ok {
		v.Within = d.duration(x, "verify.within")
	}
	if x, ok := fs["mode"]; ok {
		if s, ok := d.str(x.val, "verify.mode"); ok {
			m, err := ParseVerifyMode(s)
			if err != nil {
				d.errorf(x.val, "verify.mode: %v", err)
			}
			v.Mode = m
		}
	}
}

func (d *decoder) duration(e entry, name string) time.Duration {
	s, ok := d.str(e.val, name)
	if !ok {
		return 0
	}
	dur, err := time.ParseDuration(s)
	switch {
	case err != nil:
		d.errorf(e.val, "%s: invalid duration %q (want e.g. 30s or 2m)", name, s)
	case dur <= 0:
		d.errorf(e.val, "%s: must be > 0 (got %s)", name, s)
	}
	return dur
}

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

var expectationFields = []string{"status", "body", "contains", "present"}

func (d *decoder) expectation(e entry, name string) *Expectation {
	fs, ok := d.mapping(e.val, name, expectationFields...)
	if !ok {
		return nil
	}
	x := &Expectation{}
	if s, ok := fs["status"]; ok {
		x.Status = d.statuses(s, name+".status")
	}
	if b, ok := fs["body"]; ok {
		x.Body = d.bodyMatches(b, name+".body")
	}
	if c, ok := fs["contains"]; ok {
		if x.Contains, ok = d.str(c.val, name+".contains"); ok && x.Contains == "" {
			d.errorf(c.val, "%s.contains: empty string", name)
		}
		d.containsKey(c, name, x.Contains)
	}
	if p, ok := fs["present"]; ok {
		x.Present = d.paths(p, name+".present")
	}
	if len(fs) == 0 {
		d.errorf(e.node, "%s: empty expectation would match every answer (want status, body, contains or present)", name)
	}
	return x
}

// containsKey checks the references of a contains: a lookup's found and
// absent may name {{key}} (the answer must hold this very key: a filter the
// provider ignored cannot pass another effect off as ours); nothing else
// may be referenced, and no other expectation may reference anything.
func (d *decoder) containsKey(c entry, name, s string) {
	if !strings.Contains(s, "{{") {
		return
	}
	rest := strings.ReplaceAll(s, KeyPlaceholder, "")
	switch {
	case !strings.HasPrefix(name, "lookup."):
		d.errorf(c.val, "%s.contains: templates are allowed only in lookup.found and lookup.absent", name)
	case strings.Contains(rest, "{{") || strings.Contains(rest, "}}"):
		d.errorf(c.val, "%s.contains: only {{key}} may be referenced", name)
	}
}

func (d *decoder) statuses(e entry, name string) []int {
	nodes := []ast.Node{e.val}
	if _, isList := e.val.(*ast.SequenceNode); isList {
		nodes, _ = d.list(e, name)
		if len(nodes) == 0 {
			d.errorf(e.val, "%s: empty list", name)
		}
	}
	var out []int
	for _, n := range nodes {
		st, ok := d.integer(n, name)
		switch {
		case !ok:
		case st < 100 || st > 599:
			d.errorf(n, "%s: %d is not an HTTP status (want 100-599)", name, st)
		default:
			out = append(out, st)
		}
	}
	return out
}

// bodyMatches reads a mapping of gjson path → expected value, in order.
func (d *decoder) bodyMatches(e entry, name string) []BodyMatch {
	m, ok := e.val.(*ast.MappingNode)
	if !ok {
		d.errorf(e.val, "%s: want a mapping of gjson path to value (got %s)", name, describe(e.val))
		return nil
	}
	var out []BodyMatch
	for _, mv := range m.Values {
		path, ok1 := d.scalarText(mv.Key, name+" key")
		val, ok2 := d.scalarText(d.resolve(mv.Value), fmt.Sprintf("%s[%q]", name, path))
		if !ok1 || !ok2 {
			continue
		}
		if err := validPath(path); err != nil {
			d.errorf(mv.Key, "%s: invalid gjson path %q: %v", name, path, err)
			continue
		}
		if msg := checkCount(path, val); msg != "" {
			d.errorf(mv.Value, "%s[%q]: %s", name, path, msg)
			continue
		}
		out = append(out, BodyMatch{Path: path, Value: val})
	}
	if len(m.Values) == 0 {
		d.errorf(e.val, "%s: empty mapping", name)
	}
	return out
}

// check reads a request and its expectation, such as verify.before. Its
// request is sent before the call, so it may not use what only the call's
// answer tells ({{operation_id}}, {{response.PATH}}).
func (d *decoder) check(r *Route, e entry, name string) *Check {
	fs, ok := d.mapping(e.val, name, "request", "expect")
	if !ok {
		return nil
	}
	c := &Check{}
	if x, ok := d.require(e.node, name, fs, "request"); ok {
		c.Request = d.request(r, x, name+".request", true)
	}
	if x, ok := d.require(e.node, name, fs, "expect"); ok {
		if exp := d.expectation(x, name+".expect"); exp != nil {
			c.Expect = *exp
		}
	}
	return c
}

// checkCount refuses a count path ("errors.#") compared with anything but
// a number: values are matched as equal strings, so ">0" would silently
// never match.
func checkCount(path, val string) string {
	if path != "#" && !strings.HasSuffix(path, ".#") {
		return ""
	}
	if _, err := strconv.ParseUint(val, 10, 32); err == nil {
		return ""
	}
	return fmt.Sprintf("a count is matched as an exact number (got %q); for \"at least one\" use present: [%q]",
		val, strings.TrimSuffix(strings.TrimSuffix(path, "#"), ".")+".0")
}
