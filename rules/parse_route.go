package rules

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/toolguard/toolguard/internal/suggest"
)

var routeFields = []string{
	"name", "match", "effect", "key", "native_idempotency", "operation_id",
	"lookup", "verify", "approval", "redact", "reason", "graphql", "inject",
	"conditional", "outcome",
}

// route parses one entry of routes; it returns nil when the entry is not
// even a mapping.
func (d *decoder) route(api *API, n ast.Node) *Route {
	fs, ok := d.mapping(n, "route", routeFields...)
	if !ok {
		return nil
	}
	r := &Route{API: api, Pos: d.pos(n)}
	if e, ok := d.require(n, "", fs, "name"); ok {
		r.Pos = d.pos(e.val)
		if r.Name, ok = d.str(e.val, "name"); ok && !validRouteName(r.Name) {
			d.errorf(e.val, "name: invalid route name %q (want letters, digits, _, . and -)", r.Name)
		}
	}
	ctx := "route"
	if r.Name != "" {
		ctx = fmt.Sprintf("route %q", r.Name)
	}
	if e, ok := d.require(n, ctx, fs, "match"); ok {
		d.match(r, e)
	}
	if e, ok := d.require(n, ctx, fs, "effect"); ok {
		d.effect(r, e)
	}
	if e, ok := fs["key"]; ok {
		d.key(r, e)
	}
	if e, ok := fs["native_idempotency"]; ok {
		r.NativeIdempotency = d.nativeIdempotency(e)
	}
	if e, ok := fs["operation_id"]; ok {
		r.OperationID = d.extractor(e, "operation_id")
	}
	if e, ok := fs["lookup"]; ok {
		r.Lookup = d.lookup(r, e)
	}
	if e, ok := fs["verify"]; ok {
		r.Verify = d.verify(r, e)
	}
	if e, ok := fs["outcome"]; ok {
		r.Outcome = d.outcome(r, e)
	}
	if e, ok := fs["approval"]; ok {
		d.approval(r, e)
	}
	if e, ok := fs["redact"]; ok {
		r.Redact = d.simplePaths(e, "redact")
	}
	d.routeExtras(r, fs)
	d.checkRoute(r, fs)
	return r
}

func validRouteName(s string) bool {
	return s != "" && strings.IndexFunc(s, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.')
	}) < 0
}

func (d *decoder) match(r *Route, e entry) {
	s, ok := d.str(e.val, "match")
	if !ok {
		return
	}
	method, path, segs, err := parseMatch(s)
	if oe, ok := err.(*offsetError); ok {
		d.errs.add(d.at(e.val, oe.off), "match: %s", oe.msg)
		return
	}
	r.Method, r.Pattern, r.segs, r.matchPos = method, path, segs, d.pos(e.val)
}

func (d *decoder) effect(r *Route, e entry) {
	s, ok := d.str(e.val, "effect")
	if !ok {
		return
	}
	eff, err := ParseEffect(s)
	if err != nil {
		d.errorf(e.val, "effect: %v", err)
		return
	}
	r.Effect = eff
}

func (d *decoder) key(r *Route, e entry) {
	fs, ok := d.mapping(e.val, "key", "fields", "optional", "ignore", "scope", "content")
	if !ok {
		return
	}
	fields, hasFields := fs["fields"]
	ignore, hasIgnore := fs["ignore"]
	if hasFields && hasIgnore {
		d.errorf(ignore.node, "key: fields and ignore are mutually exclusive (fields selects, ignore takes the whole body minus some paths)")
	}
	if hasFields {
		r.Key.Fields = d.paths(fields, "key.fields")
		if len(r.Key.Fields) == 0 && d.isEmptyList(fields) {
			d.errorf(fields.val, "key.fields: empty (omit key.fields to key on the whole body)")
		}
	} else if hasIgnore {
		r.Key.Ignore = d.simplePaths(ignore, "key.ignore")
	}
	if opt, ok := fs["optional"]; ok {
		r.Key.Optional = d.optional(r, opt, hasFields)
	}
	if sc, ok := fs["scope"]; ok {
		r.Key.Scope = d.scope(sc)
	}
	if c, ok := fs["content"]; ok {
		d.rawContent(r, c)
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

func (d *decoder) nativeIdempotency(e entry) *NativeIdempotency {
	fs, ok := d.mapping(e.val, "native_idempotency", "header", "body", "ttl", "length")
	if !ok {
		return nil
	}
	h, hasHeader := fs["header"]
	b, hasBody := fs["body"]
	ni := &NativeIdempotency{}
	switch {
	case hasHeader && hasBody:
		d.errorf(b.node, "native_idempotency: header and body are mutually exclusive")
	case hasHeader:
		ni.Header = d.headerName(h, "native_idempotency.header")
	case hasBody:
		if ni.Body, ok = d.str(b.val, "native_idempotency.body"); ok && ni.Body == "" {
			d.errorf(b.val, "native_idempotency.body: empty field name")
		}
	default:
		d.errorf(e.node, "native_idempotency: want header or body")
	}
	if x, ok := fs["ttl"]; ok {
		ni.TTL = d.duration(x, "native_idempotency.ttl")
	}
	if x, ok := fs["length"]; ok {
		ni.Length = d.keyLength(x)
	}
	return ni
}

func (d *decoder) extractor(e entry, name string) Extractor {
	s, ok := d.str(e.val, name)
	if !ok {
		return Extractor{}
	}
	x, err := ParseExtractor(s)
	if err != nil {
		d.errorf(e.val, "%s: %v", name, err)
	}
	return x
}

func (d *decoder) approval(r *Route, e entry) {
	s, ok := d.str(e.val, "approval")
	if !ok {
		return
	}
	switch s {
	case "none":
	case "required":
		r.ApprovalRequired = true
	default:
		d.errorf(e.val, "approval: unknown approval %q (want none or required)", s)
	}
}

// checkRoute checks what involves several fields of a route.
func (d *decoder) checkRoute(r *Route, fs map[string]entry) {
	if r.Effect == EffectSafe && unsafeMethod(r.Method) {
		d.errorf(fs["effect"].val, "effect: safe effect on a %s route would pass it through unguarded; use reversible, or none with a reason", r.Method)
	}
	d.checkExtra(r, fs)
	cred, _ := r.Key.scopes()
	if sc, ok := fs["key"]; ok && cred && r.Key.Scope != nil && r.API.Credential == "" {
		d.errorf(sc.val, "key.scope: credential scope needs credential.header on the api")
	}
}

func unsafeMethod(m string) bool {
	switch m {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// conflicts reports routes whose patterns overlap with neither more
// specific, which ServeMux refuses (and Match could not decide).
func (d *decoder) conflicts(routes []*Route) {
	mux := http.NewServeMux()
	var added []*Route
	d.graphqlGroups(routes)
	for _, r := range routes {
		if r.segs == nil || sameEndpoint(r, routes) {
			continue
		}
		if msg := register(mux, r); msg != "" {
			d.errs.add(r.matchPos, "match: %q %s", r.Method+" "+r.Pattern, conflictWith(r, added, msg))
			continue
		}
		added = append(added, r)
	}
}

func register(mux *http.ServeMux, r *Route) (msg string) {
	defer func() {
		if p := recover(); p != nil {
			msg = fmt.Sprint(p)
		}
	}()
	mux.Handle(r.Method+" "+r.Pattern, http.NotFoundHandler())
	return ""
}

// conflictWith names the earlier route that r conflicts with.
func conflictWith(r *Route, added []*Route, msg string) string {
	for _, prev := range added {
		mux := http.NewServeMux()
		register(mux, prev)
		if m := register(mux, r); m != "" {
			if strings.Contains(m, "matches the same requests") {
				return fmt.Sprintf("matches the same requests as route %q", prev.Name)
			}
			like := ""
			if _, after, ok := strings.Cut(m, "like "); ok {
				like, _, _ = strings.Cut(after, ".\n")
				like = ", like " + like
			}
			return fmt.Sprintf("conflicts with route %q (%s): both match some paths%s, and neither is more specific",
				prev.Name, prev.Method+" "+prev.Pattern, like)
		}
	}
	first, _, _ := strings.Cut(msg, "\n")
	return "conflicts: " + first
}

// minNativeLength is the shortest native_idempotency.length: 32 hex
// characters are 128 bits of the key, still collision-free in practice.
const minNativeLength = 32

// keyLength parses native_idempotency.length: 32 to 64 characters of the
// 64-character hex key.
func (d *decoder) keyLength(e entry) int {
	n, ok := d.integer(e.val, "native_idempotency.length")
	if !ok {
		return 0
	}
	if n < minNativeLength || n > 64 {
		d.errorf(e.val, "native_idempotency.length: %d out of range (want %d-64: the key is 64 hex characters)", n, minNativeLength)
		return 0
	}
	return n
}
