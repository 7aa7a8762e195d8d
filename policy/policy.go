// Package policy holds the operator's choices that both the configuration
// and the proxy speak of: what to do with calls no route matches, with
// calls to a described API that no route names, with a prompt or
// policy version change in the middle of a workflow, and whether guards
// are enforced or only observed. Each is a
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

// Mode says whether toolguard enforces its guards or only observes what
// they would do (guard.mode, and a rule file's guard: {mode}). In observe
// mode every call is forwarded as it would be without toolguard, and
// journaled as an observation of what enforcement would have done. The
// zero value is ModeEnforce.
type Mode int

// Guard modes.
const (
	ModeEnforce Mode = iota // replay, wait, hold and refuse as the rules say
	ModeObserve             // forward untouched; journal what enforcement would have done
)

var modeNames = []string{"enforce", "observe"}

// ParseMode parses "enforce" or "observe", in any case.
func ParseMode(s string) (Mode, error) {
	i, err := parseNamed(modeNames, "mode", s)
	return Mode(i), err
}

func (m Mode) String() string { return name(modeNames, "Mode", int(m)) }

// Valid reports whether m is one of the modes above.
func (m Mode) Valid() bool { return m >= 0 && int(m) < len(modeNames) }

// ModeNames lists the modes' names in order.
func ModeNames() []string { return append([]string(nil), modeNames...) }

// MarshalText implements encoding.TextMarshaler.
func (m Mode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseMode.
func (m *Mode) UnmarshalText(text []byte) error {
	v, err := ParseMode(string(text))
	if err == nil {
		*m = v
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

// parseNamed is parse for an enum that is not called a policy: what names
// it in the error ("unknown mode ...").
func parseNamed(names []string, what, s string) (int, error) {
	i, err := parse(names, s)
	if err != nil {
		return 0, fmt.Errorf("unknown %s %q (want %s)", what, s, want(names))
	}
	return i, nil
}

// want lists names as "a, b or c", the way error messages offer them.
func want(names []string) string {
	n := len(names)
	if n == 1 {
		return names[0]
	}
	return strings.Join(names[:n-1], ", ") + " or " + names[n-1]
}
