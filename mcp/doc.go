// Package mcp reads and writes the JSON-RPC messages of the Model Context
// Protocol that toolguard guards: it finds the tools/call requests of a
// POST body, their tool name and arguments, and classifies what a server
// answered (a result, a tool error, a protocol error, or nothing usable).
// It also builds the answers toolguard gives itself: a stored response
// replayed under a new request id, and holds rendered as tool results that
// a model can read.
//
// # What it does not do
//
// It knows nothing of HTTP routing, journals or rules: the proxy package
// decides what to do with a call, this package only speaks the protocol.
package mcp
