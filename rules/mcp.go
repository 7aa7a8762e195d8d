package rules

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"slices"

	"github.com/tidwall/gjson"
)

// MCP describes the tools of one MCP server: a rule file with an mcp:
// section and tools: instead of routes:. Each tool is a Route (method POST,
// pattern Path) whose key fields are paths into the tools/call's
// params.arguments; the proxy guards a tools/call by its tool's route.
type MCP struct {
	// Path is the endpoint's path on the API's hosts (default /mcp); the
	// forward proxy guards the tools/call requests POSTed to it.
	Path string
	// Tools holds the tools the file names, by tool name.
	Tools map[string]*Route
}

// ToolCall is a lookup or verification made as a tools/call of another
// tool of the same server. It is set in Request instead of Method and URL.
type ToolCall struct {
	// Name is the tool to call.
	Name string
	// Arguments builds params.arguments.
	Arguments *ArgsTemplate
}

// ArgsTemplate is a JSON value whose strings may hold templates (see
// Template). A string that is exactly one {{body.PATH}} reference takes the
// referenced value with its JSON type (a number stays a number).
type ArgsTemplate struct {
	// exactly one of the following is set
	object []argMember
	array  []*ArgsTemplate
	str    *Template
	lit    json.RawMessage
}

type argMember struct {
	name string
	val  *ArgsTemplate
}

// Expand builds the JSON value. A missing value gives an error wrapping
// ErrMissingValue.
func (a *ArgsTemplate) Expand(v Values) ([]byte, error) {
	var b bytes.Buffer
	if err := a.expand(&b, v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func (a *ArgsTemplate) expand(b *bytes.Buffer, v Values) error {
	switch {
	case a.lit != nil:
		b.Write(a.lit)
	case a.str != nil:
		if p, ok := a.str.single(); ok && (p.ref == refBody || p.ref == refResponse) {
			r := v.body(p.text)
			if p.ref == refResponse {
				r = gjson.GetBytes(v.Response, p.text)
			}
			if !r.Exists() || r.Type == gjson.Null {
				return fmt.Errorf("expand %s: %w", p, ErrMissingValue)
			}
			b.WriteString(r.Raw)
			return nil
		}
		s, err := a.str.Expand(v, false)
		if err != nil {
			return err
		}
		q, _ := json.Marshal(s) // a string cannot fail
		b.Write(q)
	case a.array != nil:
		b.WriteByte('[')
		for i, it := range a.array {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := it.expand(b, v); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	default:
		b.WriteByte('{')
		for i, m := range a.object {
			if i > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(m.name)
			b.Write(k)
			b.WriteByte(':')
			if err := m.val.expand(b, v); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	}
	return nil
}

// each calls f with every template in a, depth first.
func (a *ArgsTemplate) each(f func(*Template)) {
	switch {
	case a == nil:
	case a.str != nil:
		f(a.str)
	case a.array != nil:
		for _, it := range a.array {
			it.each(f)
		}
	default:
		for _, m := range a.object {
			m.val.each(f)
		}
	}
}

// single returns the template's reference when the template is exactly
// one reference and nothing else.
func (t *Template) single() (tmplPart, bool) {
	if len(t.parts) == 1 && t.parts[0].ref != refNone {
		return t.parts[0], true
	}
	return tmplPart{}, false
}

// MCPEndpoint returns the MCP API whose endpoint is path on host (as
// Match takes them: path escaped), or nil. The path matches under every
// spelling a server may route to the endpoint: escapes undone (as Match
// undoes them), then empty and dot segments and a trailing '/' dropped
// (path.Clean), so /%6Dcp, /mcp/, //mcp and /x/../mcp are all /mcp.
// Spellings that mean the endpoint are guarded; none slips past as
// another path.
func (s *Set) MCPEndpoint(host, path string) *API {
	t := s.table(host)
	if t == nil || t.api.MCP == nil || cleanEndpoint(path) != cleanEndpoint(t.api.MCP.Path) {
		return nil
	}
	return t.api
}

// cleanEndpoint is the canonical spelling of an escaped request path, for
// comparing endpoints: unescaped (%2F included: a server that decodes it
// before routing sees a '/'), then cleaned. A path that does not start
// with '/' is returned as it is, and matches no endpoint.
func cleanEndpoint(p string) string {
	if p == "" || p[0] != '/' {
		return p
	}
	return path.Clean(unescapePath(p))
}

// Tool returns the route of the named tool, or nil when the file does not
// name it (or the API is not an MCP API).
func (a *API) Tool(name string) *Route {
	if a == nil || a.MCP == nil {
		return nil
	}
	return a.MCP.Tools[name]
}

// ToolNames lists the tools an MCP API names, sorted; nil for other APIs.
func (a *API) ToolNames() []string {
	if a == nil || a.MCP == nil {
		return nil
	}
	names := make([]string, 0, len(a.MCP.Tools))
	for n := range a.MCP.Tools {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
