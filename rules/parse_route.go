package rules

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// This file parses a file of routes: its routes: list, and each route's
// name, match and effect and the order its other fields are read in.

// routesFile is a rule file of routes.
var routesFile = fileKind{
	fields: []string{"version", "api", "hosts", "credential", "guard", "unlisted", "native_idempotency", "volatile", "errors", "routes"},
}

// api reads a rule file of routes.
func (d *decoder) api(n ast.Node) *API {
	api := &API{File: d.file, Pos: d.pos(n)}
	fs, ok := d.header(n, routesFile, api)
	if !ok {
		return nil
	}
	if e, ok := fs["errors"]; ok {
		api.Errors = d.errorFormat(e)
	}
	d.fileWrites(api, fs)
	if e, ok := d.require(n, "", fs, "routes"); ok {
		d.routes(api, e)
	}
	return api
}

func (d *decoder) routes(api *API, e entry) {
	items, ok := d.list(e, "routes")
	if !ok {
		return
	}
	if len(items) == 0 {
		d.errorf(e.val, "routes: empty (want at least one route)")
	}
	names := make(map[string]*Route)
	for _, it := range items {
		r := d.route(api, it)
		if r == nil {
			continue
		}
		if r.Name == UnlistedRoute {
			d.errs.add(r.Pos, "name: %q names the route of the file's unlisted writes; choose another name", r.Name)
			continue
		}
		if r.Name != "" {
			if prev := names[r.Name]; prev != nil {
				d.errs.add(r.Pos, "name: duplicate route name %q (also at %s)", r.Name, prev.Pos)
				continue
			}
			names[r.Name] = r
		}
		api.Routes = append(api.Routes, r)
	}
	d.conflicts(api.Routes)
	d.sameLookupRates(api.Routes)
}

var routeFields = []string{
	"name", "match", "effect", "key", "native_idempotency", "operation_id",
	"lookup", "verify", "approval", "redact", "reason", "graphql", "inject",
	"conditional", "outcome", "budget",
}

// route parses one entry of routes; it returns nil when the entry is not
// even a mapping.
func (d *decoder) route(api *API, n ast.Node) *Route {
	fs, ok := d.mapping(n, "route", routeFields...)
	if !ok {
		return nil
	}
	r := &Route{API: api, Pos: d.pos(n)}
	ctx := d.name(n, fs, r, "route")
	if e, ok := d.require(n, ctx, fs, "match"); ok {
		d.match(r, e)
	}
	if e, ok := d.require(n, ctx, fs, "effect"); ok {
		d.effect(r, e)
	}
	d.routeOptional(r, fs)
	nativeDefault(r)
	d.checkRoute(r, fs)
	return r
}

// routeOptional reads a route's optional fields, each after those it
// depends on: verify after operation_id and lookup (whose ids its
// templates may use), inject after key (which it adjusts).
func (d *decoder) routeOptional(r *Route, fs map[string]entry) {
	if e, ok := fs["key"]; ok {
		d.key(r, e)
	}
	if e, ok := fs["native_idempotency"]; ok {
		d.routeNative(r, e)
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
	if e, ok := fs["budget"]; ok {
		r.Budget = d.budget(e)
	}
	if e, ok := fs["redact"]; ok {
		r.Redact = d.simplePaths(e, "redact")
	}
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

// name reads the name of a route or, when kind is "tool", of an MCP
// tool; the name's position becomes the route's. It returns what messages
// about the entry's other fields start with: `route "NAME"`, or `route`
// when there is no name to tell.
func (d *decoder) name(n ast.Node, fs map[string]entry, r *Route, kind string) (ctx string) {
	if e, ok := d.require(n, "", fs, "name"); ok {
		r.Pos = d.pos(e.val)
		if r.Name, ok = d.str(e.val, "name"); ok && !validRouteName(r.Name) {
			d.errorf(e.val, "name: invalid %s name %q (want letters, digits, _, . and -)", kind, r.Name)
		}
	}
	if r.Name == "" {
		return kind
	}
	return fmt.Sprintf("%s %q", kind, r.Name)
}

func validRouteName(s string) bool {
	return s != "" && strings.IndexFunc(s, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.')
	}) < 0
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

// checkRoute checks what involves several fields of a route.
func (d *decoder) checkRoute(r *Route, fs map[string]entry) {
	if r.Effect == EffectSafe && unsafeMethod(r.Method) {
		d.errorf(fs["effect"].val, "effect: safe effect on a %s route would pass it through unguarded; use reversible, or none with a reason", r.Method)
	}
	d.checkNone(r, fs)
	if c, ok := fs["conditional"]; ok && r.Conditional != nil && r.NativeIdempotency != nil &&
		r.NativeIdempotency.Header == r.Conditional.Header {
		d.errorf(c.node, "conditional: header %s is also native_idempotency.header", r.Conditional.Header)
	}
	if in, ok := fs["inject"]; ok && r.Inject != nil && r.NativeIdempotency != nil {
		if _, own := fs["native_idempotency"]; own {
			d.errorf(in.node, "inject: the route has native_idempotency; the provider already dedupes on the key (inject is for APIs without one)")
		} else {
			d.errorf(in.node, "inject: the file's native_idempotency applies to the route, so the provider already dedupes on the key (set native_idempotency: none on the route to inject instead)")
		}
	}
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
