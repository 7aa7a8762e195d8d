package rules

import (
	"net/http"
	"strings"
)

// reason reads the reason of an effect: none route.
func (d *decoder) reason(r *Route, e entry) {
	s, ok := d.str(e.val, "reason")
	if !ok {
		return
	}
	if strings.TrimSpace(s) == "" {
		d.errorf(e.val, "reason: empty (say why the route needs no guard)")
		return
	}
	r.Reason = s
}

// unguardedFields are the route fields that have no use on a route that
// passes through unguarded.
var unguardedFields = []string{
	"key", "native_idempotency", "operation_id", "lookup", "verify",
	"approval", "redact", "inject", "conditional",
}

// checkNone checks the pairing of effect: none and reason, and that an
// unguarded route carries no guard settings.
func (d *decoder) checkNone(r *Route, fs map[string]entry) {
	re, hasReason := fs["reason"]
	switch {
	case r.Effect == EffectNone && !hasReason:
		d.errorf(fs["effect"].val, "effect: none passes the route through unguarded and needs reason: (why the call has no side effect)")
	case r.Effect != EffectNone && hasReason && r.Effect != 0:
		d.errorf(re.node, "reason: only an effect: none route takes a reason (this route is %s)", r.Effect)
	}
	if r.Effect != EffectNone {
		return
	}
	for _, f := range unguardedFields {
		if e, ok := fs[f]; ok {
			d.errorf(e.node, "%s: a route with effect: %s passes through unguarded, so %s has no use", f, r.Effect, f)
		}
	}
}

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

// conditional reads conditional: {header, value}.
func (d *decoder) conditional(e entry) *Conditional {
	fs, ok := d.mapping(e.val, "conditional", "header", "value")
	if !ok {
		return nil
	}
	c := &Conditional{}
	h, hasH := fs["header"]
	v, hasV := fs["value"]
	if !hasH || !hasV {
		d.errorf(e.node, "conditional: want header and value (such as {header: If-None-Match, value: \"*\"})")
		return nil
	}
	c.Header = d.headerName(h, "conditional.header")
	if strings.HasPrefix(strings.ToLower(c.Header), "toolguard-") {
		d.errorf(h.val, "conditional.header: %q is toolguard's own header", c.Header)
	}
	if c.Value, ok = d.str(v.val, "conditional.value"); ok && (c.Value == "" || strings.ContainsAny(c.Value, "\r\n")) {
		d.errorf(v.val, "conditional.value: want a non-empty one-line value")
	}
	return c
}

// graphql reads graphql: {operation, field}.
func (d *decoder) graphql(r *Route, e entry) *GraphQLMatch {
	fs, ok := d.mapping(e.val, "graphql", "operation", "field", "type")
	if !ok {
		return nil
	}
	g := &GraphQLMatch{}
	for _, k := range []string{"operation", "field"} {
		f, ok := fs[k]
		if !ok {
			continue
		}
		s, ok := d.str(f.val, "graphql."+k)
		if ok && !validGraphQLName(s) {
			d.errorf(f.val, "graphql.%s: invalid GraphQL name %q", k, s)
		}
		if k == "operation" {
			g.Operation = s
		} else {
			g.Field = s
		}
	}
	if t, ok := fs["type"]; ok {
		if g.Type, ok = d.str(t.val, "graphql.type"); ok && g.Type != "mutation" && g.Type != "query" && g.Type != "subscription" {
			d.errorf(t.val, "graphql.type: unknown operation type %q (want mutation, query or subscription)", g.Type)
		}
	}
	if g.Operation == "" && g.Field == "" {
		d.errorf(e.node, "graphql: want operation or field (or both)")
	}
	if r.Method != "" && r.Method != http.MethodPost {
		d.errorf(e.node, "graphql: GraphQL routes match POST only (got %s)", r.Method)
	}
	return g
}

// graphqlGroups links the routes of each GraphQL endpoint (method and
// pattern with at least one graphql route) to the first of them, which
// Match returns, and refuses two routes with the same selector or two
// without one.
func (d *decoder) graphqlGroups(routes []*Route) {
	groups := map[string][]*Route{}
	var order []string
	for _, r := range routes {
		if r.segs == nil {
			continue
		}
		k := r.Method + " " + r.Pattern
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	for _, k := range order {
		g := groups[k]
		if !hasGraphQL(g) {
			continue
		}
		g[0].graphqlGroup = g
		var plain *Route
		seen := map[GraphQLMatch]*Route{}
		for _, r := range g {
			switch {
			case r.GraphQL == nil && plain != nil:
				d.errs.add(r.matchPos, "match: route %q and route %q both serve GraphQL endpoint %s without a graphql selector (keep one, for mutations no other route selects)", plain.Name, r.Name, k)
			case r.GraphQL == nil:
				plain = r
			case seen[*r.GraphQL] != nil:
				d.errs.add(r.Pos, "graphql: route %q selects the same operations as route %q", r.Name, seen[*r.GraphQL].Name)
			default:
				seen[*r.GraphQL] = r
			}
		}
	}
}

func hasGraphQL(rs []*Route) bool {
	for _, r := range rs {
		if r.GraphQL != nil {
			return true
		}
	}
	return false
}

// sameEndpoint reports whether r shares its method and pattern with a
// GraphQL endpoint's first route, other than being that route: conflicts
// leaves such routes to graphqlGroups.
func sameEndpoint(r *Route, routes []*Route) bool {
	for _, g := range routes {
		if g.graphqlGroup != nil && g != r && g.Method == r.Method && g.Pattern == r.Pattern {
			return true
		}
	}
	return false
}

func (d *decoder) checkExtra(r *Route, fs map[string]entry) {
	d.checkNone(r, fs)
	if c, ok := fs["conditional"]; ok && r.Conditional != nil && r.NativeIdempotency != nil &&
		r.NativeIdempotency.Header == r.Conditional.Header {
		d.errorf(c.node, "conditional: header %s is also native_idempotency.header", r.Conditional.Header)
	}
	if in, ok := fs["inject"]; ok && r.Inject != nil && r.NativeIdempotency != nil {
		d.errorf(in.node, "inject: the route has native_idempotency; the provider already dedupes on the key (inject is for APIs without one)")
	}
}

// routeExtras reads the fields of the request-side features: reason,
// graphql, inject and conditional (after key, which inject adjusts).
func (d *decoder) routeExtras(r *Route, fs map[string]entry) {
	if e, ok := fs["reason"]; ok {
		d.reason(r, e)
	}
	if e, ok := fs["graphql"]; ok {
		r.GraphQL = d.graphql(r, e)
	}
	if e, ok := fs["inject"]; ok {
		r.Inject = d.inject(r, e)
	}
	if e, ok := fs["conditional"]; ok {
		r.Conditional = d.conditional(e)
	}
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
