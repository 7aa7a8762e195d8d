// Package servers is the directory of the MCP servers the proxy guards:
// the gateway's, by name, and those the forward proxy reaches, by their
// rule file. For each it knows the route every tool is guarded by (the
// tool's rule, else the unlisted policy, tightened or loosened by the
// annotations its tools/list showed) and which guarded calls are in
// flight, so that a notifications/cancelled for one is held back.
//
// It holds no pipeline: the proxy's MCP carrier reads and answers the
// messages. The package imports mcp, rules and policy only.
package servers
