package headerfilter

import (
	"net/http"
	"strings"
)

// toolguardPrefix starts every header of toolguard's namespace.
const toolguardPrefix = "Toolguard-"

// IsToolguard reports whether k is in toolguard's header namespace
// (Toolguard-*, any case).
func IsToolguard(k string) bool {
	return len(k) >= len(toolguardPrefix) && strings.EqualFold(k[:len(toolguardPrefix)], toolguardPrefix)
}

// StripToolguard removes every Toolguard-* header. On a request about to
// be forwarded: the documented request headers (Workflow, Prompt-Version,
// Policy-Version) have been read from the inbound request by then, and
// any other one an agent sends (Toolguard-Key, Toolguard-Outcome, ...) is
// toolguard's vocabulary, never the upstream's. On an upstream's answer:
// only toolguard sets Toolguard-* headers for the agent, so the
// upstream's are removed before toolguard adds its own.
func StripToolguard(h http.Header) {
	for k := range h {
		if IsToolguard(k) {
			delete(h, k)
		}
	}
}

// hopHeaders are connection-level headers never forwarded or stored.
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// unsafeResponseHeaders are never stored: they carry credentials or state
// that belongs to one client, or describe the stored encoding wrongly.
var unsafeResponseHeaders = map[string]bool{
	"Set-Cookie": true, "Set-Cookie2": true, "Authorization": true,
	"Proxy-Authenticate": true, "Www-Authenticate": false,
	"Content-Length": true, "Date": true,
}

// Storable returns the subset of an upstream response's headers that is
// safe to journal and replay, as a new header; h is not changed.
func Storable(h http.Header) http.Header {
	out := make(http.Header, len(h))
	for k, v := range h {
		if unsafeResponseHeaders[k] || isHopHeader(k) || IsToolguard(k) {
			continue
		}
		out[k] = append([]string(nil), v...)
	}
	return out
}

func isHopHeader(k string) bool {
	for _, h := range hopHeaders {
		if h == k {
			return true
		}
	}
	return false
}

// Outbound returns the headers of a guarded call for the upstream, as a
// new header; in is not changed. It drops toolguard's namespace, the
// hop-by-hop headers and those the Connection header names, and
// Accept-Encoding.
func Outbound(in http.Header) http.Header {
	out := in.Clone()
	StripToolguard(out)
	if c := out.Get("Connection"); c != "" {
		for _, f := range strings.Split(c, ",") {
			out.Del(strings.TrimSpace(f))
		}
	}
	for _, h := range hopHeaders {
		out.Del(h)
	}
	// The body is stored and parsed (operation ids, templates): ask for
	// identity encoding.
	out.Del("Accept-Encoding")
	return out
}
