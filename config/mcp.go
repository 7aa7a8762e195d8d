package config

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/toolguard/toolguard/policy"
)

// MCP configures the MCP gateway endpoint and the policy for MCP tools no
// rule names.
type MCP struct {
	// Servers are the MCP servers the proxy listener serves at
	// /mcp/{name}, each "name=URL" (the server's Streamable HTTP endpoint).
	// The tools of server name are described by the MCP rule file of
	// rules.dir whose api is name; without one, every tool follows
	// Unlisted. Empty = no gateway endpoint.
	Servers List `yaml:"servers" env:"SERVERS"`
	// Unlisted is the policy for tools no rule names.
	Unlisted policy.Unlisted `yaml:"unlisted" env:"UNLISTED"`
	// UnlistedCredential names the headers that carry the caller's
	// credential on the guarded tools of a server without a rule file, as
	// unmatched_credential does for REST calls.
	UnlistedCredential List `yaml:"unlisted_credential" env:"UNLISTED_CREDENTIAL"`
	// Annotations says what the tool annotations of tools/list may do.
	Annotations MCPAnnotations `yaml:"annotations" env:"ANNOTATIONS"`
}

// MCPServer is one entry of MCP.Servers.
type MCPServer struct {
	Name string
	URL  *url.URL
}

// ParsedServers returns MCP.Servers parsed; Validate has checked them.
func (m MCP) ParsedServers() []MCPServer {
	out := make([]MCPServer, 0, len(m.Servers))
	for _, s := range m.Servers {
		if sv, err := parseMCPServer(s); err == nil {
			out = append(out, sv)
		}
	}
	return out
}

func parseMCPServer(s string) (MCPServer, error) {
	name, raw, ok := strings.Cut(s, "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" {
		return MCPServer{}, fmt.Errorf("want name=URL")
	}
	if strings.IndexFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-')
	}) >= 0 {
		return MCPServer{}, fmt.Errorf("name %q: want lowercase letters, digits, _ and -", name)
	}
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return MCPServer{}, fmt.Errorf("server %s: want an absolute http(s) URL", name)
	}
	return MCPServer{Name: name, URL: u}, nil
}

func (m MCP) validate() error {
	seen := map[string]bool{}
	for _, s := range m.Servers {
		sv, err := parseMCPServer(s)
		if err != nil {
			return invalid("mcp.servers", s, err.Error())
		}
		if seen[sv.Name] {
			return invalid("mcp.servers", s, "duplicate server name "+sv.Name)
		}
		seen[sv.Name] = true
	}
	if err := checkCredential("mcp.unlisted_credential", m.UnlistedCredential); err != nil {
		return err
	}
	if err := checkEnum("mcp.unlisted", m.Unlisted.Valid(), m.Unlisted.String(), unlistedEnum); err != nil {
		return err
	}
	return checkEnum("mcp.annotations", mcpAnnotationsEnum.valid(int(m.Annotations)), m.Annotations.String(), mcpAnnotationsEnum)
}

// MCPAnnotations says what a server's tool annotations may do to the
// unlisted policy. The zero value is MCPAnnotationsTighten.
type MCPAnnotations int

// MCPAnnotations settings.
const (
	// MCPAnnotationsTighten: destructiveHint: true guards a tool that
	// mcp.unlisted: pass would pass; nothing loosens the policy.
	MCPAnnotationsTighten MCPAnnotations = iota
	// MCPAnnotationsTrust: as tighten, and readOnlyHint: true passes a
	// tool that mcp.unlisted: guard would guard. Only for servers whose
	// annotations the operator trusts.
	MCPAnnotationsTrust
)

var mcpAnnotationsEnum = enum{"setting", []string{"tighten", "trust"}}

// ParseMCPAnnotations parses "tighten" or "trust".
func ParseMCPAnnotations(s string) (MCPAnnotations, error) {
	i, err := mcpAnnotationsEnum.parse(s)
	return MCPAnnotations(i), err
}

func (a MCPAnnotations) String() string { return mcpAnnotationsEnum.String("MCPAnnotations", int(a)) }

// MarshalText implements encoding.TextMarshaler.
func (a MCPAnnotations) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseMCPAnnotations.
func (a *MCPAnnotations) UnmarshalText(text []byte) error {
	v, err := ParseMCPAnnotations(string(text))
	if err == nil {
		*a = v
	}
	return err
}
