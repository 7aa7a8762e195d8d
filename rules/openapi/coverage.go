package openapi

import (
	"cmp"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/toolguard/toolguard/rules"
)

// Handling is what a rule file does with a write operation.
type Handling uint8

const (
	// HandledByRoute: a guarded route (irreversible or reversible)
	// handles the operation.
	HandledByRoute Handling = iota + 1
	// HandledUnlisted: no route matches, and the file's unlisted policy
	// guards the write (keyed on the whole request).
	HandledUnlisted
	// HandledPasses: the write passes through unguarded, by a route of
	// effect safe or none, or by the file's unlisted: pass.
	HandledPasses
	// HandledOtherHost: the operation is served at hosts the file does not
	// name; the config's unmatched policy applies, not the file.
	HandledOtherHost
)

var handlingNames = [...]string{"", "route", "unlisted", "passes", "other-host"}

func (h Handling) String() string {
	if int(h) < len(handlingNames) {
		return handlingNames[h]
	}
	return fmt.Sprintf("Handling(%d)", h)
}

// MarshalText writes the handling's name.
func (h Handling) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// OperationCoverage is how a rule file handles one write operation of an
// OpenAPI document on some of its hosts.
type OperationCoverage struct {
	Method string `json:"method"`
	// Path is the operation's path template behind the server's base path,
	// as the document writes it.
	Path        string `json:"path"`
	OperationID string `json:"operation_id,omitempty"`
	// Hosts are the hosts (host or host:port) of the operation's servers
	// that this handling applies to.
	Hosts    []string `json:"hosts"`
	Handling Handling `json:"handling"`
	// Route is the route that matches; empty for unlisted writes and
	// other hosts.
	Route string `json:"route,omitempty"`
	// Effect is the route's effect, "guard" or "pass" for an unlisted
	// write (the file's policy), empty for other hosts.
	Effect string `json:"effect,omitempty"`
}

// StaleRoute is a route of the rule file that no operation of the
// document matches: a typo, or a path the provider retired.
type StaleRoute struct {
	Route string `json:"route"`
	// Match is the route's "METHOD /pattern".
	Match string `json:"match"`
	Line  int    `json:"line"`
}

// Coverage is what a rule file does with the write operations (POST, PUT,
// PATCH, DELETE) of an OpenAPI document, and which of its routes match no
// operation of the document.
type Coverage struct {
	API        string              `json:"api"`
	Operations []OperationCoverage `json:"operations"`
	Stale      []StaleRoute        `json:"stale_routes"`
	// Notes say how the document's servers were read, when that is not
	// as written (no absolute server: the file's hosts stand in).
	Notes []string `json:"notes,omitempty"`
}

// CoverageOptions tunes CoverageOf.
type CoverageOptions struct {
	// Location is where the document was read from, to resolve $refs to
	// other local files; empty allows references within the document
	// only.
	Location string
	// Servers are server URLs (https://host/base) at which every
	// operation is also served, besides the document's own servers: a
	// live host the document leaves out, say.
	Servers []string
}

// CoverageOf matches the write operations of an OpenAPI 3 document
// against a rule file's routes. An operation is served at the servers
// the document gives it (its own, its path's, or the document's, each
// server variable expanded to its enum values or default) plus
// opts.Servers; when the document names no absolute server, at the
// file's hosts. Its path template, behind each server's base path, is
// made a concrete path (every {param} a placeholder that holds no '/')
// and matched as the proxy matches a request.
//
// A route is stale when no operation has its method (any method, for a
// route of effect safe or none) and a path template that its pattern
// matches segment by segment: a literal against the same
// literal, a {x} wildcard against any segment ({y} or a literal), a
// {x...} wildcard against the rest.
func CoverageOf(spec []byte, api *rules.API, opts CoverageOptions) (*Coverage, error) {
	if api.MCP != nil {
		return nil, fmt.Errorf("api %s describes an MCP server's tools: %w", api.Name, ErrNotREST)
	}
	doc, err := loadOpenAPI(spec, opts.Location)
	if err != nil {
		return nil, err
	}
	set, err := rules.NewSet(api)
	if err != nil {
		return nil, err
	}
	extra, err := parseServers(opts.Servers)
	if err != nil {
		return nil, err
	}
	ops := documentOperations(doc)
	if len(ops) == 0 {
		return nil, ErrNoOperations
	}
	c := &Coverage{API: api.Name, Stale: []StaleRoute{}}
	docServers := expandServers(doc.Servers)
	if !hasHost(docServers) {
		docServers = fileServers(api, docServers)
		c.Notes = append(c.Notes, fmt.Sprintf("the document names no absolute server: its operations are matched at the hosts of api %s", api.Name))
	}
	for _, op := range ops {
		servers := docServers
		if len(op.servers) > 0 {
			servers = expandServers(op.servers)
		}
		op.at = append(slices.Clone(servers), extra...)
		if op.write {
			c.Operations = append(c.Operations, cover(set, api, op)...)
		}
	}
	c.Stale = staleRoutes(api, ops)
	return c, nil
}

// server is one expanded server URL: a host and a base path without a
// trailing '/'. host is empty for a relative server URL.
type server struct {
	host, base string
}

// operation is one operation of the document.
type operation struct {
	method, path, id string
	write            bool
	servers          openapi3.Servers // the operation's or its path's; nil: the document's
	at               []server         // where it is served
}

// documentOperations lists every operation, sorted by path, then method.
func documentOperations(doc *openapi3.T) []*operation {
	if doc.Paths == nil {
		return nil
	}
	var out []*operation
	for path, item := range doc.Paths.Map() {
		if item == nil {
			continue
		}
		for method, op := range item.Operations() {
			o := &operation{method: method, path: path, id: op.OperationID,
				write: slices.Contains(writeMethods, method)}
			switch {
			case op.Servers != nil && len(*op.Servers) > 0:
				o.servers = *op.Servers
			case len(item.Servers) > 0:
				o.servers = item.Servers
			}
			out = append(out, o)
		}
	}
	slices.SortFunc(out, func(a, b *operation) int {
		return cmp.Or(cmp.Compare(a.path, b.path), cmp.Compare(a.method, b.method))
	})
	return out
}

// expandServers expands every server's variables (see expandServer); a
// URL that does not parse is left out.
func expandServers(list openapi3.Servers) []server {
	var out []server
	for _, srv := range list {
		if srv == nil {
			continue
		}
		urls, _ := expandServer(srv)
		for _, raw := range urls {
			if s, err := parseServer(raw); err == nil && !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	if len(out) == 0 {
		out = []server{{}}
	}
	return out
}

func parseServer(raw string) (server, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return server{}, fmt.Errorf("server %q: %w", raw, err)
	}
	return server{host: strings.ToLower(u.Host), base: strings.TrimSuffix(u.Path, "/")}, nil
}

// parseServers parses server URLs given by hand; each must name a host.
func parseServers(raws []string) ([]server, error) {
	var out []server
	for _, raw := range raws {
		s, err := parseServer(raw)
		if err == nil && s.host == "" {
			err = fmt.Errorf("server %q: %w", raw, ErrServerHost)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func hasHost(ss []server) bool {
	return slices.ContainsFunc(ss, func(s server) bool { return s.host != "" })
}

// fileServers puts the file's hosts in place of the relative servers of a
// document that names no host.
func fileServers(api *rules.API, relative []server) []server {
	var out []server
	for _, r := range relative {
		for _, h := range api.Hosts {
			out = append(out, server{host: h, base: r.base})
		}
	}
	return out
}

// cover says how the file handles a write operation at each of its
// servers; servers handled alike share one entry.
func cover(set *rules.Set, api *rules.API, op *operation) []OperationCoverage {
	var out []OperationCoverage
	for _, s := range op.at {
		oc := OperationCoverage{Method: op.method, Path: s.base + op.path, OperationID: op.id}
		host := concreteHost(s.host)
		route, _ := set.Match(host, op.method, concretePath(s.base+op.path))
		listed := route != nil && slices.Contains(api.Routes, route) // not the API's own route of unlisted writes
		switch {
		case !set.Intercepts(host):
			oc.Handling = HandledOtherHost
		case !listed && unlistedPasses(api):
			oc.Handling, oc.Effect = HandledPasses, "pass"
		case !listed:
			oc.Handling, oc.Effect = HandledUnlisted, "guard"
		case !route.Effect.Guarded():
			oc.Handling, oc.Route, oc.Effect = HandledPasses, route.Name, route.Effect.String()
		default:
			oc.Handling, oc.Route, oc.Effect = HandledByRoute, route.Name, route.Effect.String()
		}
		i := slices.IndexFunc(out, func(o OperationCoverage) bool {
			return o.Path == oc.Path && o.Handling == oc.Handling && o.Route == oc.Route
		})
		if i < 0 {
			out, i = append(out, oc), len(out)
		}
		if !slices.Contains(out[i].Hosts, s.host) {
			out[i].Hosts = append(out[i].Hosts, s.host)
		}
	}
	return out
}

// unlistedPasses reports whether the file's unlisted policy is pass:
// writes to its hosts that no route matches go through unguarded. The
// default, guard, keys them on the whole request.
func unlistedPasses(api *rules.API) bool { return api.Unlisted == rules.UnlistedPass }

// concreteHost makes a wildcard rule host ("*.example.com") a host that it
// matches.
func concreteHost(h string) string {
	if rest, ok := strings.CutPrefix(h, "*."); ok {
		return "wildcard." + rest
	}
	return h
}

// concretePath makes a path template a request path: each segment
// escaped, so that a {param} becomes "%7Bparam%7D", which no literal
// segment of a pattern equals and which holds no '/'. What follows a '#'
// (a query that tells operations apart, in some documents) is dropped.
func concretePath(template string) string {
	template, _, _ = strings.Cut(template, "#")
	segs := strings.Split(strings.TrimPrefix(template, "/"), "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return "/" + strings.Join(segs, "/")
}

// staleRoutes lists the routes that no operation matches.
func staleRoutes(api *rules.API, ops []*operation) []StaleRoute {
	out := []StaleRoute{}
	for _, r := range api.Routes {
		if !slices.ContainsFunc(ops, func(op *operation) bool { return routeMatchesOperation(r, op) }) {
			out = append(out, StaleRoute{Route: r.Name, Match: r.Method + " " + r.Pattern, Line: r.Pos.Line})
		}
	}
	return out
}

func routeMatchesOperation(r *rules.Route, op *operation) bool {
	// A route that passes (a read sent by POST, as Slack's methods may be)
	// matches the read the document describes with another method.
	if r.Method != op.method && r.Effect.Guarded() {
		return false
	}
	for _, s := range op.at {
		if patternMatchesTemplate(r.Pattern, s.base+op.path) {
			return true
		}
	}
	return false
}

// patternMatchesTemplate matches a ServeMux path pattern against an
// OpenAPI path template, segment by segment.
func patternMatchesTemplate(pattern, template string) bool {
	template, _, _ = strings.Cut(template, "#")
	ps := strings.Split(strings.TrimPrefix(pattern, "/"), "/")
	ts := strings.Split(strings.TrimPrefix(template, "/"), "/")
	for i, p := range ps {
		last := i == len(ps)-1
		switch {
		case i >= len(ts):
			return false
		case last && (p == "" || strings.HasPrefix(p, "{") && strings.HasSuffix(p, "...}")):
			return true // a trailing '/' or {x...}: the rest of the path
		case p == "{$}":
			return last && ts[i] == "" && i == len(ts)-1
		case strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}"):
			if ts[i] == "" {
				return false
			}
		default:
			lit, err := url.PathUnescape(p)
			if err != nil || strings.ContainsAny(ts[i], "{}") || lit != ts[i] {
				return false
			}
		}
	}
	return len(ps) == len(ts)
}
