// Package hijack carries connections taken over from net/http without
// losing a byte: a Hijacker that hands over what the server read ahead,
// a connection that replays buffered bytes before its own, and a Listener
// that serves one hijacked connection with an http.Server for as long as
// it stays open. The proxy uses them to read the requests inside a CONNECT
// tunnel with the same limits as its own listener.
package hijack
