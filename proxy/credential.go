package proxy

import "github.com/toolguard/toolguard/rules"

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
