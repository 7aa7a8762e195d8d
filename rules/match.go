package rules

import (
	"slices"
	"strings"
)

// hostTable is what one host of a Set resolves to.
type hostTable struct {
	api *API
	// methods maps a method to its routes, more specific patterns first.
	methods map[string][]*Route
}

func newHostTable(api *API) *hostTable {
	t := &hostTable{api: api, methods: make(map[string][]*Route)}
	for _, r := range api.Routes {
		t.methods[r.Method] = append(t.methods[r.Method], r)
	}
	for _, rs := range t.methods {
		slices.SortStableFunc(rs, moreSpecificFirst)
	}
	return t
}

// NewSet checks that the APIs (each already valid, as Parse returns them)
// fit together: API names are unique and no host entry is claimed by two
// APIs. Problems come as *Errors. The Set's lookup tables are built here:
// a Set made any other way matches nothing.
func NewSet(apis ...*API) (*Set, error) {
	s := &Set{
		APIs:  apis,
		exact: make(map[hostKey]*hostTable),
		wild:  make(map[hostKey]*hostTable),
	}
	var errs Errors
	names := make(map[string]*API)
	claims := make(map[hostKey]Pos)
	for _, api := range apis {
		if prev, ok := names[api.Name]; ok {
			errs.add(api.Pos, "api: duplicate api %q (also in %s)", api.Name, prev.Pos)
			continue
		}
		names[api.Name] = api
		s.addHosts(api, claims, &errs)
	}
	if err := errs.err(); err != nil {
		return nil, err
	}
	return s, nil
}

// addHosts enters api's hosts in the tables; claims records where each
// host was claimed, for messages.
func (s *Set) addHosts(api *API, claims map[hostKey]Pos, errs *Errors) {
	t := newHostTable(api)
	for i, h := range api.Hosts {
		k, wildcard, err := parseRuleHost(h)
		if err != nil {
			continue // Parse reported it
		}
		m, claim := s.exact, k
		if wildcard {
			m, claim.host = s.wild, "*."+k.host
		}
		if prev, ok := m[k]; ok {
			errs.add(api.hostPos(i), "hosts: host %q is already claimed by api %q at %s", h, prev.api.Name, claims[claim])
			continue
		}
		m[k] = t
		claims[claim] = api.hostPos(i)
	}
}

func (a *API) hostPos(i int) Pos {
	if i < len(a.hostPositions) {
		return a.hostPositions[i]
	}
	return a.Pos
}

// table finds the API that claims hostport: an exact host:port, then the
// host on any port, then the longest wildcard domain (with the port, then
// without). It returns nil when no API names the host.
func (s *Set) table(hostport string) *hostTable {
	if s == nil || len(s.exact)+len(s.wild) == 0 {
		return nil
	}
	k := splitHost(hostport)
	if t := s.exact[k]; t != nil {
		return t
	}
	if t := s.exact[hostKey{host: k.host}]; t != nil {
		return t
	}
	if len(s.wild) == 0 {
		return nil
	}
	for h := k.host; ; {
		i := strings.IndexByte(h, '.')
		if i < 0 {
			return nil
		}
		h = h[i+1:]
		if t := s.wild[hostKey{h, k.port}]; t != nil {
			return t
		}
		if t := s.wild[hostKey{host: h}]; t != nil {
			return t
		}
	}
}

// Match finds the route for a request. host is the request's host, with
// or without a port (a rule host without a port matches any port; a
// request host without a port matches only such rules). path is the
// escaped path (URL.EscapedPath); segments are unescaped before they are
// compared, as ServeMux does. Methods match exactly. The most specific
// pattern wins, as in ServeMux.
//
// Match returns the route and its wildcard values (nil when it has none),
// or nil when no route matches. Routes with EffectSafe match too; the
// caller passes them through. A write that no route of the host's API
// matches gets the API's route of unlisted writes, with the path value
// "path", when the API guards them (see UnlistedRouteOf); a read gets nil.
func (s *Set) Match(host, method, path string) (*Route, map[string]string) {
	t := s.table(host)
	if t == nil {
		return nil, nil
	}
	path = CleanPath(path)
	for _, r := range t.methods[method] {
		if vals, ok := r.match(path); ok {
			return r, vals
		}
	}
	if r := t.api.UnlistedRouteOf(method); r != nil {
		if vals, ok := r.match(path); ok {
			return r, vals
		}
	}
	return nil, nil
}

// API returns the API that claims hostport, or nil when no API names its
// host.
func (s *Set) API(hostport string) *API {
	if t := s.table(hostport); t != nil {
		return t.api
	}
	return nil
}

// Intercepts reports whether some API names the host of hostport, so that
// a CONNECT to it must be intercepted to see its requests.
func (s *Set) Intercepts(hostport string) bool {
	return s.table(hostport) != nil
}

// UnmatchedAPI returns the API of Fallback routes, named "unmatched", whose
// callers carry their credential in headers (canonical names, as
// NewCredential returns them), or share one scope on purpose when none is
// set.
func UnmatchedAPI(headers []string, none bool) *API {
	a := &API{Name: "unmatched"}
	a.SetCredential(headers, none)
	return a
}

// defaultUnmatched is the API of Fallback: callers carry their credential
// in Authorization.
var defaultUnmatched = UnmatchedAPI([]string{"Authorization"}, false)

// Fallback is FallbackOf with callers whose credential is in
// Authorization.
func Fallback(method, host, path string) *Route {
	return FallbackOf(defaultUnmatched, method, host, path)
}

// FallbackOf returns the synthetic route that the proxy's "unmatched: guard"
// policy applies to a side-effecting request no rule describes: API api
// (see UnmatchedAPI), route name method+" "+host (so that keys of
// different hosts differ), irreversible, keyed on the whole body, scoped by
// the caller's credential and the workflow. The path takes part in the key
// as the path value "path" (the pattern is "/{path...}"), whatever Input's
// PathValues say.
func FallbackOf(api *API, method, host, path string) *Route {
	k := splitHost(host)
	return &Route{
		API:       api,
		Name:      method + " " + k.String(),
		Method:    method,
		Pattern:   "/{path...}",
		Effect:    EffectIrreversible,
		Key:       KeySpec{Scope: []Scope{ScopeCredential, ScopeWorkflow}},
		segs:      []segment{{kind: segMulti, text: "path"}},
		fixedPath: map[string]string{"path": strings.TrimPrefix(path, "/")},
	}
}
