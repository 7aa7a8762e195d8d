// Package eventstream speaks the small part of server-sent events the
// proxy writes: telling whether a client accepts an event stream or a
// response is one, rendering one message as an event, and copying a
// response out event by event. Reading a server's event stream is package
// mcp's (mcp.ReadResponse).
package eventstream
