package rules

import (
	"fmt"
	"net/http"
	"net/textproto"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// A rule file's credential names the headers that carry the caller's
// credential (docs/tenancy.md):
//
//	credential: {header: Authorization}
//	credential: {headers: [Authorization, X-Api-Key]}   # the first one present counts
//	credential: none                                    # every caller shares one scope, on purpose
//
// The credential enters keys, the caller identity and workflow scopes only
// as an HMAC. A guarded call that carries none of the headers is refused,
// unless the file says none.

// CredentialNone is the spelling of a credential setting that declares
// that callers share one scope on purpose.
const CredentialNone = "none"

// CallerCredential returns what identifies the caller of a in h: the value
// of the first of a's credential headers the request carries. When that
// header is not the first one listed, the value is prefixed with the
// header's name and a NUL ("X-Api-Key\x00" + value; header values never
// hold a NUL), so that one value sent in two headers is two callers, while
// the first header keys exactly as a file naming only it. "" when the
// request carries none of them, or a names none.
func (a *API) CallerCredential(h http.Header) string {
	for i, name := range a.credentials() {
		v := h.Get(name)
		if v == "" {
			continue
		}
		if i == 0 {
			return v
		}
		return name + "\x00" + v
	}
	return ""
}

// CredentialHeaders are the canonical names of every header that may carry
// the caller's credential, in the file's order; nil when it names none
// (or a is nil).
func (a *API) CredentialHeaders() []string { return a.credentials() }

func (a *API) credentials() []string {
	if a == nil {
		return nil
	}
	if len(a.Credentials) == 0 && a.Credential != "" {
		return []string{a.Credential} // an API built in code with one header
	}
	return a.Credentials
}

// MissingCredential describes why a guarded call of route that carries no
// credential is refused, naming the headers expected; "" when the call may
// go on without one (credential: none).
func (r *Route) MissingCredential() string {
	a := r.API
	if a.NoCredential {
		return ""
	}
	name := a.Name + "." + r.Name
	if a.Name == "" {
		name = r.Name
	}
	hs := a.credentials()
	if len(hs) == 0 {
		return fmt.Sprintf("route %s: the call carries no credential and its rule file declares no credential header: "+
			"declare credential: {header: NAME}, or credential: none if every caller may share one answer", name)
	}
	return fmt.Sprintf("route %s: the call carries no credential (expected header %s): "+
		"send it, or declare credential: none if every caller may share one answer", name, strings.Join(hs, " or "))
}

// NewCredential returns the credential setting of headers (each a header
// name, or the single entry "none"), as the unmatched and MCP unlisted
// policies are configured: the canonical header names, or none.
func NewCredential(headers []string) (names []string, none bool, err error) {
	if len(headers) == 1 && strings.EqualFold(headers[0], CredentialNone) {
		return nil, true, nil
	}
	seen := map[string]bool{}
	for _, h := range headers {
		if strings.EqualFold(h, CredentialNone) {
			return nil, false, fmt.Errorf("%q stands alone: list header names, or none", h)
		}
		if !validToken(h) {
			return nil, false, fmt.Errorf("invalid header name %q", h)
		}
		c := textproto.CanonicalMIMEHeaderKey(h)
		if seen[c] {
			return nil, false, fmt.Errorf("duplicate header %s", c)
		}
		seen[c] = true
		names = append(names, c)
	}
	return names, false, nil
}

// SetCredential sets a's credential headers (canonical names, as
// NewCredential returns them), or none.
func (a *API) SetCredential(headers []string, none bool) {
	a.NoCredential = none
	a.Credentials = headers
	a.Credential = ""
	if len(headers) > 0 {
		a.Credential = headers[0]
	}
}

// credential reads a file's credential field into api.
func (d *decoder) credential(api *API, e entry) {
	api.credentialSet = true
	if s, ok := e.val.(*ast.StringNode); ok {
		if s.Value != CredentialNone {
			d.errorf(e.val, "credential: want none, {header: NAME} or {headers: [NAME, ...]} (got %q)", s.Value)
			return
		}
		api.SetCredential(nil, true)
		return
	}
	fs, ok := d.mapping(e.val, "credential", "header", "headers")
	if !ok {
		return
	}
	var names []string
	one, hasOne := fs["header"]
	many, hasMany := fs["headers"]
	switch {
	case hasOne && hasMany:
		d.errorf(many.node, "credential: header and headers are exclusive (list every header under headers)")
		return
	case hasOne:
		if h := d.headerName(one, "credential.header"); h != "" {
			names = append(names, h)
		}
	case hasMany:
		names = d.credentialHeaders(many)
	default:
		d.errorf(e.node, "credential: missing field \"header\" (or \"headers\")")
		return
	}
	api.SetCredential(names, false)
}

// credentialHeaders reads credential.headers: one or more distinct names.
func (d *decoder) credentialHeaders(e entry) []string {
	items, ok := d.list(e, "credential.headers")
	if !ok {
		return nil
	}
	if len(items) == 0 {
		d.errorf(e.val, "credential.headers: empty (want at least one header, or credential: none)")
	}
	var out []string
	seen := map[string]bool{}
	for i, it := range items {
		h := d.headerName(entry{val: it}, fmt.Sprintf("credential.headers[%d]", i))
		switch {
		case h == "":
		case seen[h]:
			d.errorf(it, "credential.headers[%d]: duplicate header %s", i, h)
		default:
			seen[h] = true
			out = append(out, h)
		}
	}
	return out
}

// Warnings are what a rule author should fix in files that load: one line
// each, "file:line:col: warning: ...", in the Set's API order. Today: a
// file of routes that declares no credential, whose guarded calls are all
// refused.
func (s *Set) Warnings() []string {
	var out []string
	for _, a := range s.APIs {
		if a.MCP != nil || a.credentialSet {
			continue // an MCP file's credential defaults to Authorization
		}
		at := a.keyPos
		if at.Line == 0 {
			at = Pos{File: a.File, Line: 1, Col: 1}
		}
		out = append(out, fmt.Sprintf("%s: warning: api %s declares no credential, so every guarded call is refused: "+
			"add credential: {header: NAME} (or {headers: [NAME, ...]}) naming the header that carries the caller's credential, "+
			"or credential: none if every caller may share one answer", at, a.Name))
	}
	return out
}
