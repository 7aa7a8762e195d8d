package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/toolguard/toolguard/rules"
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

// errBadScope is an agent's scope that names no api, or a credential
// header the api does not list.
var errBadScope = errors.New("agent scope")

// ScopeFunc computes the credential scope an agent's admin request
// presents (see AdminOptions.AgentScope).
type ScopeFunc func(r *http.Request) (string, error)

// AgentScope is the credential scope r presents: "" when it presents none.
func (s *Server) AgentScope(r *http.Request) (string, error) {
	name, cred := r.Header.Get(HeaderAgentAPI), r.Header.Get(HeaderAgentCredential)
	if name == "" && cred == "" {
		return "", nil
	}
	api := s.apiNamed(name)
	if api == nil {
		return "", badRequest(fmt.Errorf("%w: %s %q names no api of the rules", errBadScope, HeaderAgentAPI, name))
	}
	headers := api.CredentialHeaders()
	if len(headers) == 0 {
		return "", nil
	}
	header := headers[0]
	if h := r.Header.Get(HeaderAgentCredentialHeader); h != "" {
		header = http.CanonicalHeaderKey(h)
		if !contains(headers, header) {
			return "", badRequest(fmt.Errorf("%w: api %s takes its credential in %s, not %s", errBadScope, name, strings.Join(headers, ", "), header))
		}
	}
	return s.credentialMAC(api, http.Header{header: {cred}}), nil
}

// apiNamed is the API of that name: a rule file, an MCP server's, or the
// unmatched policy's.
func (s *Server) apiNamed(name string) *rules.API {
	for _, a := range s.rules.APIs {
		if a.Name == name {
			return a
		}
	}
	if ep := s.mcp.byName[name]; ep != nil {
		return ep.api
	}
	if s.unmatched != nil && s.unmatched.Name == name {
		return s.unmatched
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
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
