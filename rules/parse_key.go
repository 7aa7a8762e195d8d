package rules

import (
	"github.com/goccy/go-yaml/ast"

	"github.com/toolguard/toolguard/internal/suggest"
)

// This file parses a route's key: reference, fields, optional, ignore,
// scope and content; and the lists of paths that key.fields, key.ignore
// and redact take.

func (d *decoder) key(r *Route, e entry) {
	fs, ok := d.mapping(e.val, "key", "reference", "fields", "optional", "ignore", "scope", "content")
	if !ok {
		return
	}
	fields, hasFields := fs["fields"]
	ignore, hasIgnore := fs["ignore"]
	ref, hasRef := fs["reference"]
	if hasRef {
		r.Key.Reference = d.paths(ref, "key.reference")
		if len(r.Key.Reference) == 0 && d.isEmptyList(ref) {
			d.errorf(ref.val, "key.reference: empty (omit key.reference when the route has no business reference)")
		}
	}
	if hasFields && hasIgnore && !hasRef {
		d.errorf(ignore.node, "key: fields and ignore are mutually exclusive (fields selects, ignore takes the whole body minus some paths)")
	}
	if hasFields {
		r.Key.Fields = d.paths(fields, "key.fields")
		if len(r.Key.Fields) == 0 && d.isEmptyList(fields) {
			d.errorf(fields.val, "key.fields: empty (omit key.fields to key on the whole body)")
		}
	}
	if hasIgnore && (!hasFields || hasRef) {
		r.Key.Ignore = d.simplePaths(ignore, "key.ignore")
	}
	if opt, ok := fs["optional"]; ok && !hasRef {
		r.Key.Optional = d.optional(r, opt, hasFields)
	}
	if sc, ok := fs["scope"]; ok {
		r.Key.Scope = d.scope(sc)
	}
	if c, ok := fs["content"]; ok {
		d.rawContent(r, c)
	}
	if hasRef {
		d.checkReference(r, fs)
	}
}

// checkReference checks a key with a reference: its fields are all
// optional (so key.optional has nothing to say), it reads fields (so the
// body cannot be keyed as bytes), and no reference is also a field, an
// ignored path or a volatile one (it would be keyed and dropped at once).
func (d *decoder) checkReference(r *Route, fs map[string]entry) {
	if e, ok := fs["optional"]; ok {
		d.errorf(e.node, "key.optional: with key.reference every key field is optional already")
	}
	if e, ok := fs["content"]; ok && r.Key.RawContent {
		d.errorf(e.node, "key.content: a body keyed as bytes has no reference to read (drop key.reference or key.content)")
	}
	seq, _ := fs["reference"].val.(*ast.SequenceNode)
	if seq == nil {
		return // reported already
	}
	for i, n := range seq.Values {
		s, ok := d.resolve(n).(*ast.StringNode)
		if !ok || !contains(r.Key.Reference, s.Value) {
			continue // reported already
		}
		at, ref := n, s.Value
		switch {
		case contains(r.Key.Fields, ref):
			d.errorf(at, "key.reference[%d]: %q is also in key.fields (the reference is keyed already)", i, ref)
		case samePathIn(ref, r.Key.Ignore):
			d.errorf(at, "key.reference[%d]: %q is also in key.ignore", i, ref)
		case samePathIn(ref, r.API.Volatile):
			d.errorf(at, "key.reference[%d]: %q is also in the file's volatile", i, ref)
		}
	}
}

// optional reads key.optional: each entry must be one of key.fields, and
// at least one field must stay required (a body with none of the fields
// would otherwise share one key with every other such body).
func (d *decoder) optional(r *Route, e entry, hasFields bool) []string {
	names, nodes, ok := d.strs(e, "key.optional")
	if !ok {
		return nil
	}
	if !hasFields {
		d.errorf(e.node, "key.optional: only key.fields can be optional (a key on the whole body has no required fields)")
		return nil
	}
	out := []string{}
	for i, s := range names {
		switch {
		case contains(out, s):
			d.errorf(nodes[i], "key.optional[%d]: duplicate field %q", i, s)
		case !contains(r.Key.Fields, s):
			d.errorf(nodes[i], "key.optional[%d]: %q is not one of key.fields%s", i, s, suggest.Hint(s, r.Key.Fields))
		default:
			out = append(out, s)
		}
	}
	if len(r.Key.Fields) > 0 && len(out) == len(r.Key.Fields) {
		d.errorf(e.val, "key.optional: every key field is optional, so requests with none of them would all share one key (keep at least one required)")
	}
	return out
}

func (d *decoder) isEmptyList(e entry) bool {
	s, ok := e.val.(*ast.SequenceNode)
	return ok && len(s.Values) == 0
}

// paths reads a list of gjson paths, rejecting invalid and repeated ones.
func (d *decoder) paths(e entry, name string) []string {
	ps, nodes, ok := d.strs(e, name)
	if !ok {
		return nil
	}
	out := ps[:0:0]
	for i, p := range ps {
		switch err := validPath(p); {
		case err != nil:
			d.errorf(nodes[i], "%s[%d]: invalid gjson path %q: %v", name, i, p, err)
		case contains(out, p):
			d.errorf(nodes[i], "%s[%d]: duplicate path %q", name, i, p)
		default:
			out = append(out, p)
		}
	}
	return out
}

// simplePaths reads a list of paths in the syntax of key.ignore and
// redact.
func (d *decoder) simplePaths(e entry, name string) []string {
	ps, nodes, ok := d.strs(e, name)
	if !ok {
		return nil
	}
	out := []string{}
	for i, p := range ps {
		if err := validSimplePath(p); err != nil {
			d.errorf(nodes[i], "%s[%d]: invalid path %q: %v", name, i, p, err)
			continue
		}
		out = append(out, p)
	}
	return out
}

func (d *decoder) scope(e entry) []Scope {
	names, nodes, ok := d.strs(e, "key.scope")
	if !ok {
		return nil
	}
	out := []Scope{}
	for i, s := range names {
		sc, err := ParseScope(s)
		switch {
		case err != nil:
			d.errorf(nodes[i], "key.scope[%d]: %v", i, err)
		case contains(scopeStrings(out), s):
			d.errorf(nodes[i], "key.scope[%d]: duplicate scope %q", i, s)
		default:
			out = append(out, sc)
		}
	}
	return out
}

func scopeStrings(ss []Scope) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.String()
	}
	return out
}

// rawContent reads key.content: sha256.
func (d *decoder) rawContent(r *Route, e entry) {
	s, ok := d.str(e.val, "key.content")
	if !ok {
		return
	}
	if s != "sha256" {
		d.errorf(e.val, "key.content: unknown content key %q (want sha256)", s)
		return
	}
	r.Key.RawContent = true
}
