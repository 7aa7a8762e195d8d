// Package mcp reads and writes the JSON-RPC messages of the Model Context
// Protocol that toolguard guards: it finds a POST body's tools/call
// requests with their tool name and arguments, and classifies a server's
// answer as a result, a tool error, a protocol error or no answer at all.
// It also builds the answers toolguard gives itself — a stored response
// under a new request id, and holds as tool results a model can read —
// and knows nothing of HTTP routing, journals or rules.
package mcp
