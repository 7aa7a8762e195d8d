// Package gateway is the HTTP front of toolguard's MCP guard: it reads the
// JSON-RPC messages an agent POSTs to an MCP server, through the gateway
// endpoint /mcp/{name} or the forward proxy, hands each tools/call of a
// guarded tool to the guard pipeline, and lets everything else through.
// It answers in MCP's own shapes: JSON-RPC errors for messages it cannot
// take, a batch's answers in the batch's order, and an event stream when
// the server sends messages before its response.
//
// The pipeline (package proxy) is reached through the small Pipeline
// interface declared here; which server a message is for, and which route
// guards each tool, is package mcp/servers'.
package gateway
