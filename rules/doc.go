// Package rules loads the per-API rule files that tell toolguard which calls
// have side effects, and turns a request into the idempotency key of its
// business intent. It is pure code: it reads rule files and nothing else.
//
// # Rule files
//
// A rule file describes one external API: its hosts, the header that carries
// its credential, and its side-effecting routes (see DESIGN.md, "Rule
// files"). Load validates every file strictly and reports each problem as
// file:line:col: message.
//
// # Keys
//
// A key is the hex sha256 of the canonical form of {api, route, scope values,
// path values, selected body fields}. Canonical JSON has sorted keys and
// normalised numbers; form bodies and query strings become sorted key →
// values. Two requests that differ only in field order, whitespace or
// ignored fields get the same key.
package rules
