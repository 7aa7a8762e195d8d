package proxy

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/toolguard/toolguard/rules"
)

// Credential says where the callers of calls that no rule file describes
// (the unmatched guard policy, an MCP server without a rule file) carry
// their credential. Its zero value means Authorization: a call guarded
// without one is refused, never keyed into a scope shared by every caller.
type Credential struct {
	// Headers are the header names, in order: the first one a request
	// carries counts (rules.API.CallerCredential); nil means
	// Authorization.
	Headers []string
	// None lets calls without a credential go on, every such caller in
	// one scope, on purpose (configured as "none").
	None bool
}

// api is the synthetic API named name whose callers carry c.
func (c Credential) api(name string) *rules.API {
	headers := c.Headers
	if len(headers) == 0 && !c.None {
		headers = []string{"Authorization"}
	}
	names, _, err := rules.NewCredential(headers)
	if err != nil {
		names = headers // config.Validate has checked them
	}
	a := &rules.API{Name: name}
	a.SetCredential(names, c.None)
	return a
}

// credentialMAC identifies a caller of an API by an HMAC of its credential
// (rules.API.CallerCredential); "" when the API names no credential or the
// request carries none. It is the scope of the caller's workflows.
func (s *Server) credentialMAC(api *rules.API, h http.Header) string {
	v := api.CallerCredential(h)
	if v == "" {
		return ""
	}
	m := hmac.New(sha256.New, s.opts.Secret)
	m.Write([]byte("caller\x00" + api.Name + "\x00" + v))
	return hex.EncodeToString(m.Sum(nil))
}

// CredentialScope is the credential scope (credentialMAC) of a caller of
// the api named api that presents credential in header ("": the api's
// first credential header); "" for an api without a credential. The api
// is a rule file's, an MCP server's or the unmatched policy's; an unknown
// one, or a header the api does not take its credential in, is an error.
// The admin API limits the agent token to it (admin.Proxy).
func (s *Server) CredentialScope(api, header, credential string) (string, error) {
	a := s.apiNamed(api)
	if a == nil {
		return "", fmt.Errorf("api %q: no rule file, MCP server or unmatched policy has that name", api)
	}
	headers := a.CredentialHeaders()
	if len(headers) == 0 {
		return "", nil
	}
	name := headers[0]
	if header != "" {
		name = http.CanonicalHeaderKey(header)
		if !slices.Contains(headers, name) {
			return "", fmt.Errorf("api %s takes its credential in %s, not %s", api, strings.Join(headers, ", "), name)
		}
	}
	return s.credentialMAC(a, http.Header{name: {credential}}), nil
}

// apiNamed is the API of that name: a rule file, an MCP server's, or the
// unmatched policy's.
func (s *Server) apiNamed(name string) *rules.API {
	for _, a := range s.rules.APIs {
		if a.Name == name {
			return a
		}
	}
	if ep := s.mcp.Named(name); ep != nil {
		return ep.API
	}
	if s.unmatched != nil && s.unmatched.Name == name {
		return s.unmatched
	}
	return nil
}
