package config

import (
	"testing"

	"github.com/toolguard/toolguard/policy"
)

func TestMCPValidate(t *testing.T) {
	tests := []struct {
		name    string
		servers List
		want    string
	}{
		{name: "ok", servers: List{"tickets=http://127.0.0.1:9000/mcp", "gh=https://api.example.com/mcp/"}},
		{name: "no URL", servers: List{"tickets"}, want: "mcp.servers (TOOLGUARD_MCP_SERVERS): want name=URL (got tickets)"},
		{name: "bad name", servers: List{"Tickets=http://x/mcp"}, want: `mcp.servers (TOOLGUARD_MCP_SERVERS): name "Tickets": want lowercase letters, digits, _ and - (got Tickets=http://x/mcp)`},
		{name: "relative URL", servers: List{"t=/mcp"}, want: "mcp.servers (TOOLGUARD_MCP_SERVERS): server t: want an absolute http(s) URL (got t=/mcp)"},
		{name: "duplicate", servers: List{"t=http://a/mcp", "t=http://b/mcp"}, want: "mcp.servers (TOOLGUARD_MCP_SERVERS): duplicate server name t (got t=http://b/mcp)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			c.MCP.Servers = tc.servers
			got := ""
			if err := c.Validate(); err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("Validate() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestMCPEnv(t *testing.T) {
	c := Default()
	err := ApplyEnv(&c, []string{"TOOLGUARD_MCP_SERVERS=a=http://x/mcp,b=http://y/mcp", "TOOLGUARD_MCP_UNLISTED=pass", "TOOLGUARD_MCP_ANNOTATIONS=trust"})
	if err != nil {
		t.Fatal(err)
	}
	sv := c.MCP.ParsedServers()
	if len(sv) != 2 || sv[1].Name != "b" || sv[1].URL.Host != "y" || c.MCP.Unlisted != policy.UnlistedPass || c.MCP.Annotations != MCPAnnotationsTrust {
		t.Errorf("MCP = %+v, servers %+v", c.MCP, sv)
	}
	err = ApplyEnv(&c, []string{"TOOLGUARD_MCP_UNLISTED=maybe"})
	if err == nil || err.Error() != `TOOLGUARD_MCP_UNLISTED (mcp.unlisted): unknown policy "maybe" (want guard or pass)` {
		t.Errorf("ApplyEnv(bad) = %v", err)
	}
}
