package rules

import (
	"github.com/tidwall/gjson"
)

// Recovery values.
//
// A lookup or a verification may be made long after the request that
// triggered it: by the background resolver of an abandoned step, after a
// restart, on another replica. The request's body is never journaled, so
// what its templates read of the request — {{body.PATH}} and
// {{path.NAME}} — is kept with the step, and only that: the minimum
// recovery needs.

// RecoveryRefs lists the request values the route's lookup and
// verification templates read, as "body.PATH" and "path.NAME", each once,
// in the order they appear.
func (r *Route) RecoveryRefs() []string {
	var out []string
	seen := map[string]bool{}
	add := func(t *Template) {
		if t == nil {
			return
		}
		for _, p := range t.refs() {
			var ref string
			switch p.ref {
			case refBody:
				ref = "body." + p.text
			case refPath:
				ref = "path." + p.text
			default:
				continue
			}
			if !seen[ref] {
				seen[ref] = true
				out = append(out, ref)
			}
		}
	}
	addRequest := func(q *Request) {
		add(q.URL)
		if q.Tool != nil {
			q.Tool.Arguments.each(add)
		}
	}
	if r.Lookup != nil {
		addRequest(&r.Lookup.Request)
	}
	if r.Verify != nil {
		addRequest(&r.Verify.Request)
		if r.Verify.Before != nil {
			addRequest(&r.Verify.Before.Request)
		}
	}
	return out
}

// RecoveryValues reads the values refs name from a request: the body's
// from doc (canonical JSON) as raw JSON, the path's as JSON strings. A
// value whose redacted form differs from doc's (a redact path) is left
// out, as is a missing one: a template that needs it then fails, and its
// lookup says "unknown", never a wrong "absent".
func RecoveryValues(refs []string, doc, redacted []byte, path map[string]string) map[string]string {
	if len(refs) == 0 {
		return nil
	}
	out := make(map[string]string, len(refs))
	for _, ref := range refs {
		switch {
		case len(ref) > 5 && ref[:5] == "body.":
			v := gjson.GetBytes(doc, ref[5:])
			if !v.Exists() || v.Type == gjson.Null {
				continue
			}
			if redacted != nil && gjson.GetBytes(redacted, ref[5:]).Raw != v.Raw {
				continue
			}
			out[ref] = v.Raw
		case len(ref) > 5 && ref[:5] == "path.":
			if v, ok := path[ref[5:]]; ok && v != "" {
				q := gjson.AppendJSONString(nil, v)
				out[ref] = string(q)
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// body reads {{body.PATH}}: from the request's body, or, when there is
// none (a recovery long after the request), from the stored values.
func (v Values) body(path string) gjson.Result {
	if v.Body == nil && v.Stored != nil {
		if raw, ok := v.Stored["body."+path]; ok {
			return gjson.Parse(raw)
		}
	}
	return gjson.GetBytes(v.Body, path)
}

// pathValue reads {{path.NAME}}, from the request or the stored values.
func (v Values) pathValue(name string) string {
	if s, ok := v.Path[name]; ok || v.Stored == nil {
		return s
	}
	return gjson.Parse(v.Stored["path."+name]).String()
}

// AbsentRefs lists, as "body.PATH", the {{body.PATH}} references of the
// lookup's request that v lacks (missing, null or empty, as Expand sees
// them): a lookup whose business reference the request did not carry
// cannot be made, and recovery then has no lookup for the call (the
// native key's re-send inside its lifetime, a hold past it). nil when v
// holds every one, or when l is nil.
func (l *Lookup) AbsentRefs(v Values) []string {
	if l == nil {
		return nil
	}
	var out []string
	check := func(t *Template) {
		if t == nil {
			return
		}
		for _, p := range t.refs() {
			if p.ref == refBody && p.value(v) == "" && !contains(out, "body."+p.text) {
				out = append(out, "body."+p.text)
			}
		}
	}
	check(l.Request.URL)
	if l.Request.Tool != nil {
		l.Request.Tool.Arguments.each(check)
	}
	return out
}
