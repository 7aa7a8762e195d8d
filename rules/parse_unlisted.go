package rules

import "github.com/goccy/go-yaml/ast"

// This file parses the fields of a file of routes that concern every
// write to its hosts: unlisted (the policy for writes no route matches),
// the file's native_idempotency (sent on those writes, and every route's
// default) and volatile (fields no whole-request key holds); and a route's
// native_idempotency: none, which opts out of the file's.

// fileWrites reads unlisted, native_idempotency and volatile into api, and
// builds its routes of unlisted writes.
func (d *decoder) fileWrites(api *API, fs map[string]entry) {
	api.Unlisted = UnlistedGuard
	if e, ok := fs["unlisted"]; ok {
		if s, ok := d.str(e.val, "unlisted"); ok {
			p, err := ParseUnlistedPolicy(s)
			if err != nil {
				d.errorf(e.val, "unlisted: %v", err)
			}
			api.Unlisted = p
		}
	}
	if e, ok := fs["native_idempotency"]; ok {
		api.NativeIdempotency = d.fileNative(e)
	}
	if e, ok := fs["volatile"]; ok {
		api.Volatile = d.simplePaths(e, "volatile")
	}
	api.buildUnlisted()
}

// fileNative reads the file's native_idempotency: a header only, since an
// unlisted write may carry a body of any type (a field is set on routes).
func (d *decoder) fileNative(e entry) *NativeIdempotency {
	if isNone(e.val) {
		d.errorf(e.val, "native_idempotency: none is for a route that opts out of the file's (a file without native_idempotency declares none)")
		return nil
	}
	ni := d.nativeIdempotency(e)
	if ni != nil && ni.Body != "" {
		d.errorf(e.val, "native_idempotency: a file's key goes in a header, since unlisted writes may carry any body (set body on a route)")
		return nil
	}
	return ni
}

// routeNative reads a route's native_idempotency: its own, or none.
func (d *decoder) routeNative(r *Route, e entry) {
	if !isNone(e.val) {
		r.NativeIdempotency = d.nativeIdempotency(e)
		return
	}
	if r.API.NativeIdempotency == nil {
		d.errorf(e.val, "native_idempotency: none, but the file declares no native_idempotency to opt out of")
	}
	r.noNative = true
}

// isNone reports whether n is the string none.
func isNone(n ast.Node) bool {
	s, ok := n.(*ast.StringNode)
	return ok && s.Value == "none"
}

// nativeDefault gives a guarded route that sets no native_idempotency (and
// does not opt out) the file's.
func nativeDefault(r *Route) {
	if r.NativeIdempotency == nil && !r.noNative && r.Effect.Guarded() {
		r.NativeIdempotency = r.API.NativeIdempotency
	}
}
