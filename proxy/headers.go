package proxy

import (
	"net/http"
	"strings"

	"github.com/toolguard/toolguard/rules"
)

// Headers (contract, DESIGN.md "Headers").
const (
	HeaderWorkflow      = rules.HeaderWorkflow // part of the key's scope
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

// isToolguardHeader reports whether k is in toolguard's header namespace
// (Toolguard-*, any case).
func isToolguardHeader(k string) bool {
	return len(k) >= len("Toolguard-") && strings.EqualFold(k[:len("Toolguard-")], "Toolguard-")
}

// stripToolguardHeaders removes every Toolguard-* header. On a request
// about to be forwarded: the documented request headers (Workflow,
// Prompt-Version, Policy-Version) have been read from the inbound request
// by then, and any other one an agent sends (Toolguard-Key,
// Toolguard-Outcome, ...) is toolguard's vocabulary, never the upstream's.
// On an upstream's answer: only toolguard sets Toolguard-* headers for the
// agent, so the upstream's are removed before toolguard adds its own.
func stripToolguardHeaders(h http.Header) {
	for k := range h {
		if isToolguardHeader(k) {
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

// storableHeader returns the subset of an upstream response's headers that
// is safe to journal and replay.
func storableHeader(h http.Header) http.Header {
	out := make(http.Header, len(h))
	for k, v := range h {
		if unsafeResponseHeaders[k] || isHopHeader(k) || isToolguardHeader(k) {
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
