package admin

import (
	"context"
	"fmt"
	"net/http"
)

// The agent token's scope.
//
// The agent token reads and writes only what the presenting caller owns:
// the steps and workflows of one credential scope, the same HMAC of the
// API's credential that keys its calls (journal.Step.CredentialMAC). An
// agent proves the scope by presenting that credential, as it does on
// every call: Toolguard-Api names the rule file's api, and
// Toolguard-Credential carries the value of its credential header
// (Toolguard-Credential-Header names the header when the file lists
// several). Without them an agent sees only the unscoped steps of routes
// with `credential: none`. The operator token sees every scope.

// Admin request headers of the agent's scope.
const (
	HeaderAgentAPI              = "Toolguard-Api"
	HeaderAgentCredential       = "Toolguard-Credential"
	HeaderAgentCredentialHeader = "Toolguard-Credential-Header"
)

// presentedScope is the credential scope an agent's request presents: ""
// when it presents none. The proxy computes it (Proxy.CredentialScope); a
// scope it cannot compute (an api the rules do not have, a header the api
// does not take its credential in) is the caller's mistake.
func (a *API) presentedScope(r *http.Request) (string, error) {
	name, cred := r.Header.Get(HeaderAgentAPI), r.Header.Get(HeaderAgentCredential)
	if name == "" && cred == "" {
		return "", nil
	}
	scope, err := a.proxy.CredentialScope(name, r.Header.Get(HeaderAgentCredentialHeader), cred)
	if err != nil {
		return "", badRequest(fmt.Errorf("%w: %w", errBadScope, err))
	}
	return scope, nil
}

// scopeKey holds an agent request's scope in its context.
type scopeKey struct{}

// withAgentScope records that r is an agent's, limited to scope.
func withAgentScope(r *http.Request, scope string) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), scopeKey{}, scope))
}

// agentScope is the scope an agent's request is limited to; ok is false
// for an operator's request, which sees every scope.
func agentScope(r *http.Request) (scope string, ok bool) {
	scope, ok = r.Context().Value(scopeKey{}).(string)
	return scope, ok
}

// visible reports whether a step or workflow of scope may be shown to r.
func visible(r *http.Request, scope string) bool {
	mine, limited := agentScope(r)
	return !limited || mine == scope
}

// workflowScopeParam is the ?scope= a workflow request selects: the
// operator's as given, an agent's own (whatever it asked for).
func workflowScopeParam(r *http.Request) string {
	mine, limited := agentScope(r)
	switch {
	case !limited:
		return r.URL.Query().Get("scope")
	case mine == "":
		return scopeNone
	}
	return mine
}
