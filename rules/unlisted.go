package rules

import (
	"fmt"
	"net/http"
)

// Unlisted writes.
//
// A write (POST, PUT, PATCH, DELETE) to a host that a file of routes
// names, which no route of the file matches, is an unlisted write. Under
// unlisted: guard (the default) Match gives it the API's route named
// UnlistedRoute: irreversible, keyed on the whole request (the method, the
// host, the path, the query and the body, less the file's volatile
// fields), scoped by the caller's credential and the workflow, with the
// file's native_idempotency. Under unlisted: pass it matches no route and
// passes through. Reads never match it.

// UnlistedRoute is the name (and metric label) of the route of an API's
// unlisted writes.
const UnlistedRoute = "unlisted"

// UnlistedPolicy is what happens to a file's unlisted writes.
type UnlistedPolicy uint8

const (
	// UnlistedPass passes unlisted writes through unguarded. It is the
	// zero value: an API that Parse did not read from a file of routes
	// (an MCP file, an API built in code) guards nothing it does not list.
	UnlistedPass UnlistedPolicy = iota
	// UnlistedGuard guards them on the route named UnlistedRoute; Parse's
	// default for a file of routes.
	UnlistedGuard
)

var unlistedNames = [...]string{"pass", "guard"}

func (p UnlistedPolicy) String() string {
	if int(p) < len(unlistedNames) {
		return unlistedNames[p]
	}
	return fmt.Sprintf("unlisted(%d)", p)
}

// ParseUnlistedPolicy parses guard or pass.
func ParseUnlistedPolicy(s string) (UnlistedPolicy, error) {
	for i, n := range unlistedNames {
		if n == s {
			return UnlistedPolicy(i), nil
		}
	}
	return 0, fmt.Errorf("unknown policy %q (want guard or pass)", s)
}

// writeMethods are the methods of unlisted writes.
var writeMethods = []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// UnlistedRouteOf returns the API's route of unlisted writes of method, or
// nil when its policy is pass or the method is not a write (a read never
// is unlisted). Parse builds the routes; an API built otherwise has none.
func (a *API) UnlistedRouteOf(method string) *Route {
	if a == nil {
		return nil
	}
	return a.unlisted[method]
}

// Unlisted reports whether r is the route of an API's unlisted writes.
func (r *Route) Unlisted() bool { return r != nil && r.unlisted }

// buildUnlisted makes the API's routes of unlisted writes, one per write
// method, when its policy is guard. The path takes part in the key as the
// path value "path" of the pattern "/{path...}", the host as the scope
// host (a bucket in S3's virtual-hosted style is a host), the method
// through the key material (see Deriver.material).
func (a *API) buildUnlisted() {
	a.unlisted = nil
	if a.Unlisted != UnlistedGuard || a.MCP != nil {
		return
	}
	a.unlisted = make(map[string]*Route, len(writeMethods))
	for _, m := range writeMethods {
		a.unlisted[m] = &Route{
			API:               a,
			Name:              UnlistedRoute,
			Method:            m,
			Pattern:           "/{path...}",
			Effect:            EffectIrreversible,
			Key:               KeySpec{Scope: []Scope{ScopeCredential, ScopeHost, ScopeWorkflow}},
			NativeIdempotency: a.NativeIdempotency,
			Pos:               a.Pos,
			segs:              []segment{{kind: segMulti, text: "path"}},
			unlisted:          true,
		}
	}
}
