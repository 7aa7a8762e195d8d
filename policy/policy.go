// Package policy holds the operator's choices that both the configuration
// and the proxy speak of: what to do with calls no route matches, with
// calls to a described API that no route names, and with a prompt or
// policy version change in the middle of a workflow. Each is a
// typed enum with one definition here, so that config parses straight into
// the values proxy.Options takes. It imports nothing of toolguard's.
package policy

import (
	"fmt"
	"strings"
)

// Unmatched is the policy for calls that no rule route matches, on hosts
// that no rule file of routes names (a write to a named host follows the
// file's unlisted: policy; reject still refuses it). The zero value is
// UnmatchedPassthrough.
type Unmatched int

// Unmatched policies.
const (
	UnmatchedPassthrough Unmatched = iota // forward untouched, no journal write
	UnmatchedGuard                        // treat POST/PUT/PATCH/DELETE as irreversible routes keyed on the whole body
	UnmatchedReject                       // refuse the call
)

var unmatchedNames = []string{"passthrough", "guard", "reject"}

// ParseUnmatched parses "passthrough", "guard" or "reject", in any case.
func ParseUnmatched(s string) (Unmatched, error) {
	i, err := parse(unmatchedNames, s)
	return Unmatched(i), err
}

func (u Unmatched) String() string { return name(unmatchedNames, "Unmatched", int(u)) }

// Valid reports whether u is one of the policies above.
func (u Unmatched) Valid() bool { return u >= 0 && int(u) < len(unmatchedNames) }

// UnmatchedNames lists the policies' names in order.
func UnmatchedNames() []string { return append([]string(nil), unmatchedNames...) }

// MarshalText implements encoding.TextMarshaler.
func (u Unmatched) MarshalText() ([]byte, error) { return []byte(u.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseUnmatched.
func (u *Unmatched) UnmarshalText(text []byte) error {
	v, err := ParseUnmatched(string(text))
	if err == nil {
		*u = v
	}
	return err
}

// VersionChange says what happens when a workflow's prompt or policy
// version changes halfway. The zero value is VersionStop.
type VersionChange int

// Version change policies.
const (
	VersionStop  VersionChange = iota // hold the step with version-changed for review
	VersionAllow                      // record the change as an event and carry on
)

var versionNames = []string{"stop", "allow"}

// ParseVersionChange parses "stop" or "allow", in any case.
func ParseVersionChange(s string) (VersionChange, error) {
	i, err := parse(versionNames, s)
	return VersionChange(i), err
}

func (p VersionChange) String() string { return name(versionNames, "VersionChange", int(p)) }

// Valid reports whether p is one of the policies above.
func (p VersionChange) Valid() bool { return p >= 0 && int(p) < len(versionNames) }

// VersionChangeNames lists the policies' names in order.
func VersionChangeNames() []string { return append([]string(nil), versionNames...) }

// MarshalText implements encoding.TextMarshaler.
func (p VersionChange) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseVersionChange.
func (p *VersionChange) UnmarshalText(text []byte) error {
	v, err := ParseVersionChange(string(text))
	if err == nil {
		*p = v
	}
	return err
}

// Unlisted is the policy for calls to a described API that no route or
// tool of its rules names: MCP tools no rule names (mcp.unlisted), and
// writes to a rule file's hosts that no route matches (a rule file's
// unlisted). The zero value is UnlistedGuard.
type Unlisted int

// Unlisted policies.
const (
	UnlistedGuard Unlisted = iota // irreversible, keyed on the whole request or arguments
	UnlistedPass                  // passed through, never journaled
)

var unlistedNames = []string{"guard", "pass"}

// ParseUnlisted parses "guard" or "pass", in any case.
func ParseUnlisted(s string) (Unlisted, error) {
	i, err := parse(unlistedNames, s)
	return Unlisted(i), err
}

func (u Unlisted) String() string { return name(unlistedNames, "Unlisted", int(u)) }

// Valid reports whether u is one of the policies above.
func (u Unlisted) Valid() bool { return u >= 0 && int(u) < len(unlistedNames) }

// UnlistedNames lists the policies' names in order.
func UnlistedNames() []string { return append([]string(nil), unlistedNames...) }

// MarshalText implements encoding.TextMarshaler.
func (u Unlisted) MarshalText() ([]byte, error) { return []byte(u.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseUnlisted.
func (u *Unlisted) UnmarshalText(text []byte) error {
	v, err := ParseUnlisted(string(text))
	if err == nil {
		*u = v
	}
	return err
}

func name(names []string, typ string, i int) string {
	if i < 0 || i >= len(names) {
		return fmt.Sprintf("%s(%d)", typ, i)
	}
	return names[i]
}

func parse(names []string, s string) (int, error) {
	for i, n := range names {
		if strings.EqualFold(s, n) {
			return i, nil
		}
	}
	return 0, fmt.Errorf("unknown policy %q (want %s)", s, want(names))
}

// want lists names as "a, b or c", the way error messages offer them.
func want(names []string) string {
	n := len(names)
	if n == 1 {
		return names[0]
	}
	return strings.Join(names[:n-1], ", ") + " or " + names[n-1]
}
