package rules

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// This file parses expectations, what an answer must look like: status,
// body, contains and present.

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
