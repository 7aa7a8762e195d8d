// Package mcp reads the JSON-RPC messages of the Model Context Protocol
// that toolguard guards — a POST body's tools/call requests with their tool
// name and arguments — and classifies a server's answer as a result, a tool
// error, a protocol error or no answer. It writes the answers toolguard
// gives itself: a stored response under a new request id, and holds as tool
// results a model can read.
//
// # Scope
//
// The package knows nothing of HTTP routing, journals or rules; the proxy
// package decides what to do with a call.
package mcp
