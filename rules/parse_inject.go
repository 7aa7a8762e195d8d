package rules

import "strings"

// This file parses a route's inject: where the key is written into the
// outbound request.

// inject reads inject: {header|body|form|append, template}.
func (d *decoder) inject(r *Route, e entry) *Inject {
	fs, ok := d.mapping(e.val, "inject", "header", "body", "form", "append", "template")
	if !ok {
		return nil
	}
	in := &Inject{Template: defaultInjectTemplate}
	var kinds []string
	for _, k := range []string{"header", "body", "form", "append"} {
		if _, ok := fs[k]; ok {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) != 1 {
		d.errorf(e.node, "inject: want exactly one of header, body, form and append (got %d)", len(kinds))
		return nil
	}
	f := fs[kinds[0]]
	switch kinds[0] {
	case "header":
		in.Header = d.headerName(f, "inject.header")
	case "body":
		in.Body = d.plainPath(f, "inject.body")
	case "form":
		if in.Form, _ = d.str(f.val, "inject.form"); in.Form == "" {
			d.errorf(f.val, "inject.form: empty field name")
		}
	case "append":
		in.Append = d.plainPath(f, "inject.append")
	}
	if t, ok := fs["template"]; ok {
		in.Template = d.injectTemplate(t)
	} else if in.Append != "" {
		d.errorf(e.node, "inject: append needs a template, such as \"\\n<!-- toolguard:{{key}} -->\"")
	}
	d.keepInjectedOutOfKey(r, in, f)
	return in
}

// plainPath reads a dotted path of plain names (no gjson syntax).
func (d *decoder) plainPath(e entry, name string) string {
	s, ok := d.str(e.val, name)
	if !ok {
		return ""
	}
	for _, c := range splitDotted(s) {
		if c == "" || strings.ContainsAny(c, "*?|#@!()[]{}\\") {
			d.errorf(e.val, "%s: invalid path %q (want dotted plain names, such as metadata.toolguard_key)", name, s)
			return ""
		}
	}
	return s
}

// injectTemplate reads inject.template: {{key}} exactly once and nothing
// else, so that the marker can be recognised and removed again.
func (d *decoder) injectTemplate(e entry) *Template {
	s, ok := d.str(e.val, "inject.template")
	if !ok {
		return nil
	}
	t, err := ParseTemplate(s)
	if err != nil {
		d.errorf(e.val, "inject.template: %v", err)
		return nil
	}
	refs := t.refs()
	for _, p := range refs {
		if p.ref != refKey {
			d.errorf(e.val, "inject.template: %s is not allowed (want {{key}} only)", p)
			return nil
		}
	}
	if len(refs) != 1 {
		d.errorf(e.val, "inject.template: want {{key}} exactly once (got %d)", len(refs))
		return nil
	}
	return t
}

// keepInjectedOutOfKey makes sure the injected field never counts in the
// key: a whole-body key ignores it, and key.fields may not name it.
// (inject.append markers are removed by Derive instead.)
func (d *decoder) keepInjectedOutOfKey(r *Route, in *Inject, at entry) {
	var path string
	switch {
	case in.Body != "":
		path = in.Body
	case in.Form != "":
		path = escapeSimple(in.Form)
	default:
		return
	}
	if len(r.Key.Fields) == 0 {
		r.Key.Ignore = append(r.Key.Ignore, path)
		return
	}
	for i, f := range r.Key.Fields {
		if f == path || f == in.Form || strings.HasPrefix(path, f+".") || strings.HasPrefix(f, path+".") {
			d.errorf(at.val, "inject: key.fields[%d] %q includes the injected field, which must stay out of the key", i, f)
		}
	}
}

// escapeSimple escapes a literal name for a key.ignore path.
func escapeSimple(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(".\\*?|#@!()[]{}", s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
