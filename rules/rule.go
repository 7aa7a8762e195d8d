package rules

import (
	"fmt"
	"time"
)

// Effect classifies what a route does to the outside world.
type Effect uint8

const (
	// EffectIrreversible: the effect cannot be undone; an unknown outcome
	// that cannot be queried is held for review.
	EffectIrreversible Effect = iota + 1
	// EffectReversible: re-sending after an unknown outcome is tolerable.
	EffectReversible
	// EffectSafe: no side effect; the call passes through unguarded.
	EffectSafe
)

var effectNames = [...]string{"", "irreversible", "reversible", "safe"}

func (e Effect) String() string {
	if int(e) < len(effectNames) && e > 0 {
		return effectNames[e]
	}
	return fmt.Sprintf("effect(%d)", e)
}

// ParseEffect parses irreversible, reversible or safe.
func ParseEffect(s string) (Effect, error) {
	for i, n := range effectNames {
		if i > 0 && n == s {
			return Effect(i), nil
		}
	}
	return 0, fmt.Errorf("unknown effect %q (want irreversible, reversible or safe)", s)
}

// Scope names one of the values that partition the key space.
type Scope uint8

const (
	// ScopeCredential: an HMAC of the API's credential header.
	ScopeCredential Scope = iota + 1
	// ScopeWorkflow: the Toolguard-Workflow header.
	ScopeWorkflow
)

// Set is every loaded API, with the tables Match uses. Build it with Load
// or NewSet; its zero value (and any Set built otherwise) matches nothing.
// A Set is safe for concurrent use once built.
type Set struct {
	APIs []*API

	exact map[hostKey]*hostTable // host (and port) → its API
	wild  map[hostKey]*hostTable // domain of "*.domain" (and port) → its API
}

// API is one rule file.
type API struct {
	Name  string
	Hosts []string
	// Credential is the canonical name of the header that carries the
	// caller's credential; empty means none.
	Credential string
	Routes     []*Route
	// MCP is set for a rule file that describes an MCP server's tools
	// (see mcp.go); such an API has no Routes.
	MCP *MCP
	// File is the path the API was loaded from.
	File string
	// Pos is where the api name is declared, for messages.
	Pos Pos

	hostPositions []Pos // of each Hosts entry
}

// Route is one side-effecting operation of an API.
type Route struct {
	API    *API
	Name   string
	Method string
	// Pattern is the path pattern of match, in net/http ServeMux syntax.
	Pattern string
	Effect  Effect
	Key     KeySpec
	// NativeIdempotency is nil when the provider has no idempotency key.
	NativeIdempotency *NativeIdempotency
	// OperationID extracts the provider's id for the effect from a response;
	// its zero value extracts nothing.
	OperationID Extractor
	Lookup      *Lookup // nil: no lookup
	Verify      *Verify // nil: no verification
	// ApprovalRequired holds every new intent for an operator's approval.
	ApprovalRequired bool
	// Redact lists paths (in the syntax of KeySpec.Ignore) of request
	// fields that must never be stored or logged. They still count in the
	// key, through an HMAC: see Intent.Redacted.
	Redact []string
	// Pos is where the route is declared, for messages.
	Pos Pos

	segs      []segment         // Pattern, split; see match
	matchPos  Pos               // of the match value
	fixedPath map[string]string // path values of a Fallback route
}

// KeySpec says which parts of the body define the intent. Exactly one of
// Fields and Ignore is used: Fields selects, Ignore (possibly empty) takes
// the whole body minus those paths.
type KeySpec struct {
	// Fields are gjson paths into the canonical body; missing fields count
	// as null.
	Fields []string
	// Ignore paths are dotted keys with '\' escapes, array indices and '#'
	// for every element (lines.#.trace).
	Ignore []string
	// Scope lists the values that partition the key space. nil means both
	// credential and workflow; an empty non-nil slice means none.
	Scope []Scope
}

// NativeIdempotency says where the provider takes an idempotency key:
// exactly one of Header and Body is set.
type NativeIdempotency struct {
	Header string
	Body   string // top-level JSON or form field name
}

// Source is where an Extractor reads from.
type Source uint8

const (
	SourceNone Source = iota
	SourceBody
	SourceHeader
)

// Extractor reads a value from a response: body:<gjson path> or
// header:<name>.
type Extractor struct {
	Source Source
	Path   string
}

// Request is a templated outbound request of a lookup or a verification.
type Request struct {
	Method string
	URL    *Template
	// Tool, when set, makes the request a tools/call of an MCP server
	// (Method and URL are then unset).
	Tool *ToolCall
}

// Expectation matches an answer. All set parts must hold.
type Expectation struct {
	// Status lists accepted status codes; empty accepts any.
	Status []int
	// Body maps gjson paths to the expected string form of their value.
	Body []BodyMatch
	// Contains is a substring of the raw body; empty means no check.
	Contains string
}

// BodyMatch is one gjson path → expected value pair, in file order.
type BodyMatch struct {
	Path  string
	Value string
}

// Lookup asks the external system whether a call took effect.
type Lookup struct {
	Request     Request
	Found       *Expectation
	Absent      *Expectation
	OperationID Extractor
}

// VerifyMode says whether verification delays the agent's answer.
type VerifyMode uint8

const (
	VerifyAsync VerifyMode = iota
	VerifySync
)

// Verify checks that a committed effect is visible.
type Verify struct {
	Request Request
	Expect  Expectation
	Within  time.Duration
	Mode    VerifyMode
}

// Pos is a position in a rule file.
type Pos struct {
	File      string
	Line, Col int
}

func (p Pos) String() string { return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col) }

var scopeNames = [...]string{"", "credential", "workflow"}

func (s Scope) String() string {
	if int(s) < len(scopeNames) && s > 0 {
		return scopeNames[s]
	}
	return fmt.Sprintf("scope(%d)", s)
}

// ParseScope parses credential or workflow.
func ParseScope(s string) (Scope, error) {
	for i, n := range scopeNames {
		if i > 0 && n == s {
			return Scope(i), nil
		}
	}
	return 0, fmt.Errorf("unknown scope %q (want credential or workflow)", s)
}

func (m VerifyMode) String() string {
	if m == VerifySync {
		return "sync"
	}
	return "async"
}

// ParseVerifyMode parses sync or async.
func ParseVerifyMode(s string) (VerifyMode, error) {
	switch s {
	case "sync":
		return VerifySync, nil
	case "async":
		return VerifyAsync, nil
	}
	return 0, fmt.Errorf("unknown mode %q (want sync or async)", s)
}
