package proxy

import (
	"net/http"
	"strings"
)

// Headers (contract, DESIGN.md "Headers").
const (
	HeaderWorkflow      = "Toolguard-Workflow"
	HeaderPromptVersion = "Toolguard-Prompt-Version"
	HeaderPolicyVersion = "Toolguard-Policy-Version"
	HeaderKey           = "Toolguard-Key"
	HeaderOutcome       = "Toolguard-Outcome"
	HeaderReplayed      = "Idempotent-Replayed"
	// HeaderKeyExpires says until when the key answers duplicates from the
	// journal (journal.retention after the step's last change); absent when
	// steps are kept forever.
	HeaderKeyExpires = "Toolguard-Key-Expires"
)

// Outcomes carried in Toolguard-Outcome (contract).
const (
	OutcomeForwarded   = "forwarded"
	OutcomeReplayed    = "replayed"
	OutcomeRecovered   = "recovered"
	OutcomeBlocked     = "blocked"
	OutcomePassthrough = "passthrough"
)

// stripToolguardHeaders removes the request headers toolguard reads; they
// are never forwarded upstream.
func stripToolguardHeaders(h http.Header) {
	h.Del(HeaderWorkflow)
	h.Del(HeaderPromptVersion)
	h.Del(HeaderPolicyVersion)
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

// storableHeader returns the subset of an upstream response's headers that
// is safe to journal and replay.
func storableHeader(h http.Header) http.Header {
	out := make(http.Header, len(h))
	for k, v := range h {
		if unsafeResponseHeaders[k] || isHopHeader(k) || strings.HasPrefix(k, "Toolguard-") {
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

// outboundHeader prepares the headers of a guarded call for the upstream.
func outboundHeader(in http.Header) http.Header {
	out := in.Clone()
	stripToolguardHeaders(out)
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
