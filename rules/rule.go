package rules

import (
	"fmt"
	"time"

	"github.com/toolguard/toolguard/policy"
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
	// EffectNone: a write method (POST, PUT, PATCH, DELETE) whose call has
	// no side effect, such as a search or a GraphQL query sent by POST. It
	// passes through unguarded like EffectSafe, but the route must say why
	// (Route.Reason), so that an exemption is always a decision on record.
	EffectNone
)

var effectNames = [...]string{"", "irreversible", "reversible", "safe", "none"}

func (e Effect) String() string {
	if int(e) < len(effectNames) && e > 0 {
		return effectNames[e]
	}
	return fmt.Sprintf("effect(%d)", e)
}

// Guarded reports whether calls of the effect are journaled (false for
// safe and none, which pass through).
func (e Effect) Guarded() bool { return e != EffectSafe && e != EffectNone }

// ParseEffect parses irreversible, reversible, safe or none.
func ParseEffect(s string) (Effect, error) {
	for i, n := range effectNames {
		if i > 0 && n == s {
			return Effect(i), nil
		}
	}
	return 0, fmt.Errorf("unknown effect %q (want irreversible, reversible, safe or none)", s)
}

// Scope names one of the values that partition the key space.
type Scope uint8

const (
	// ScopeCredential: an HMAC of the API's credential header.
	ScopeCredential Scope = iota + 1
	// ScopeWorkflow: the Toolguard-Workflow header.
	ScopeWorkflow
	// ScopeHost: the request's host name (lowercase, without port), for
	// APIs whose host names the resource, such as an S3 bucket in
	// virtual-hosted style ("*.s3.amazonaws.com"). Only when named.
	ScopeHost
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
	// Credential is the canonical name of the first header that carries
	// the caller's credential (Credentials[0]); empty when the file names
	// none.
	Credential string
	// Credentials are the canonical names of every header that may carry
	// the caller's credential, in the file's order: the first one a
	// request carries counts (see CallerCredential). nil when none.
	Credentials []string
	// NoCredential is set by credential: none: the file's callers share
	// one key and workflow scope on purpose. Without it, a guarded call
	// that carries no credential is refused.
	NoCredential bool
	// Mode is the file's guard.mode (guard: {mode: observe}), which
	// overrides the global one for the API's calls (see GuardMode); nil:
	// the global one.
	Mode *policy.Mode
	// Errors is the shape of toolguard's own refusals on the API's routes;
	// its zero value is problem+json.
	Errors ErrorFormat
	Routes []*Route
	// MCP is set for a rule file that describes an MCP server's tools
	// (see mcp.go); such an API has no Routes.
	MCP *MCP
	// Unlisted is the policy for writes to the API's hosts that no route
	// matches (unlisted:); Parse sets UnlistedGuard for a file of routes
	// unless it says pass. Its zero value passes them through: an MCP
	// file, or an API built without Parse. See unlisted.go.
	Unlisted UnlistedPolicy
	// NativeIdempotency is the file's native_idempotency: sent on unlisted
	// writes, and the default of every route that sets none (Parse copies
	// it to them). nil: the file declares none.
	NativeIdempotency *NativeIdempotency
	// Volatile lists paths (in the syntax of KeySpec.Ignore) of body fields,
	// and names of query parameters, that never take part in a whole-request
	// key: that of an unlisted write and a key.reference fallback. nil: none.
	Volatile []string
	// File is the path the API was loaded from.
	File string
	// Pos is where the api name is declared, for messages.
	Pos Pos

	hostPositions []Pos // of each Hosts entry
	credentialSet bool  // the file has a credential field
	keyPos        Pos   // of the api: key; the zero Pos when the file has none
	// unlisted are the routes of unlisted writes, by method, when Unlisted
	// is UnlistedGuard (see buildUnlisted).
	unlisted map[string]*Route
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
	// Outcome classifies answers by their body; nil classifies by status.
	Outcome *Outcome
	// ApprovalRequired holds every new intent for an operator's approval.
	ApprovalRequired bool
	// ApprovalWhen holds the new intents for which it is true (approval:
	// {when: EXPR}); nil: none. See NeedsApproval.
	ApprovalWhen *Condition
	// Budget caps the new intents one caller sends on the route; nil:
	// no cap.
	Budget *Budget
	// Redact lists paths (in the syntax of KeySpec.Ignore) of request
	// fields that must never be stored or logged. They still count in the
	// key, through an HMAC: see Intent.Redacted.
	Redact []string
	// Reason says why an EffectNone route needs no guard; it is set
	// exactly when Effect is EffectNone.
	Reason string
	// GraphQL selects the operations of a GraphQL endpoint that the route
	// describes; nil: the route matches on method and path alone. See
	// SelectGraphQL.
	GraphQL *GraphQLMatch
	// Inject puts the derived key into the outbound request, where the
	// provider stores it and a lookup can find it; nil: nothing.
	Inject *Inject
	// Conditional is a header set on every outbound request (S3's
	// If-None-Match: *), so that the provider refuses a second effect;
	// nil: none.
	Conditional *Conditional
	// Pos is where the route is declared, for messages.
	Pos Pos

	graphqlGroup []*Route          // on the first route of a GraphQL endpoint: all its routes
	segs         []segment         // Pattern, split; see match
	matchPos     Pos               // of the match value
	fixedPath    map[string]string // path values of a Fallback route
	// unlisted marks the route of an API's unlisted writes: its key holds
	// the method, and drops the file's volatile fields.
	unlisted bool
	// noNative is set by native_idempotency: none, so that the file's
	// native_idempotency is not copied to the route.
	noNative bool
}

// KeySpec says which parts of the body define the intent. Without
// Reference, exactly one of Fields and Ignore is used: Fields selects,
// Ignore (possibly empty) takes the whole body minus those paths. With
// Reference, Fields are used when the body holds every reference, and
// Ignore (with the API's Volatile) when it lacks one.
type KeySpec struct {
	// Reference lists business references (gjson paths, key.reference):
	// when the body holds every one, the key is their values plus Fields,
	// every field optional; when it lacks any, the key is the whole
	// request, the body less Ignore and the API's Volatile, and its
	// material says "reference": null. Such a route never refuses a body
	// for a missing field. nil: the route has no reference.
	Reference []string
	// Fields are gjson paths into the canonical body. Each is required
	// unless Optional names it: Derive refuses a body that lacks a
	// required field (*MissingFieldsError) rather than key it as null. A
	// field present with the value null counts as present.
	Fields []string
	// Optional lists the Fields that a body may lack; a missing optional
	// field counts as null in the key. It never names every field.
	Optional []string
	// Ignore paths are dotted keys with '\' escapes, array indices and '#'
	// for every element (lines.#.trace). A last step NAME[] (escaped:
	// NAME\[\]) also drops NAME[0], NAME[1]...: a form's two spellings
	// of an array.
	Ignore []string
	// RawContent keys the body as bytes, whatever its type (key.content:
	// sha256): the canonical body is {"content_sha256", "content_type",
	// "size"} and is never parsed. For uploads of files and objects.
	RawContent bool
	// Scope lists the values that partition the key space. nil means both
	// credential and workflow; an empty non-nil slice means none.
	Scope []Scope
}

// Budget is a route's budget: at most Calls new intents of one caller
// (one credential) are sent within any window of Per; the next is held
// for an operator (reason budget) instead of being sent.
type Budget struct {
	Calls int
	Per   time.Duration
}

// NativeIdempotency says where the provider takes an idempotency key:
// exactly one of Header and Body is set.
type NativeIdempotency struct {
	Header string
	Body   string // top-level JSON or form field name
	// TTL is how long the provider remembers a key (Stripe: 24h); past it
	// since the step was created, recovery never re-sends on the key.
	// Zero means forever.
	TTL time.Duration
	// Length, when not zero, is how many leading characters of the key
	// are sent: for providers that cap the key's length (Square: 45).
	Length int
}

// Value is what is sent as the provider's idempotency key for key: the
// key, or its first Length characters. A prefix of the hex key is still a
// function of the intent alone, so every re-send carries the same value.
func (ni *NativeIdempotency) Value(key string) string {
	if ni.Length > 0 && ni.Length < len(key) {
		return key[:ni.Length]
	}
	return key
}

// Source is where an Extractor reads from.
type Source uint8

const (
	SourceNone Source = iota
	SourceBody
	SourceHeader
	SourceTemplate
)

// Extractor reads a value from a response: body:<gjson path>,
// header:<name>, or a template of {{response.PATH}} and {{header.NAME}}
// references for composite ids (Slack's channel and ts).
type Extractor struct {
	Source Source
	Path   string
	// Template is set when Source is SourceTemplate.
	Template *Template
}

// Request is a templated outbound request of a lookup or a verification.
type Request struct {
	Method string
	URL    *Template
	// Query holds parameters set on the expanded URL (a lookup's next-page
	// cursor); nil for requests as a rule file writes them.
	Query [][2]string
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
	// Present lists gjson paths that must exist, whatever their value
	// (errors.0: a non-empty GraphQL errors list).
	Present []string
	// Any, when set, holds alternatives (an outcome rule given as a
	// list): the expectation matches when one of them does, and its
	// other fields are empty.
	Any []*Expectation
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
	// Answer, when set, makes a found effect answer the agent in the
	// provider's shape instead of toolguard's evidence body.
	Answer *RecoveredAnswer
	// Settle is how long after an interrupted attempt the provider's
	// search may still miss it: "absent" inside it is inconclusive.
	Settle time.Duration
	// Rate is the API's budget for lookups; nil means unlimited.
	Rate *Rate
	// Next follows paged answers; nil reads one page.
	Next *Pagination

	ratePos Pos // of Rate, for messages
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
	// Before, when set, is checked before the first send: an answer that
	// does not meet it (the thing to delete is already gone) makes the
	// call "already done", and it is not sent. nil checks nothing first.
	Before *Check
}

// Check is a request and what its answer must look like.
type Check struct {
	Request Request
	Expect  Expectation
}

// Pos is a position in a rule file.
type Pos struct {
	File      string
	Line, Col int
}

func (p Pos) String() string { return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col) }

var scopeNames = [...]string{"", "credential", "workflow", "host"}

func (s Scope) String() string {
	if int(s) < len(scopeNames) && s > 0 {
		return scopeNames[s]
	}
	return fmt.Sprintf("scope(%d)", s)
}

// ParseScope parses credential, workflow or host.
func ParseScope(s string) (Scope, error) {
	for i, n := range scopeNames {
		if i > 0 && n == s {
			return Scope(i), nil
		}
	}
	return 0, fmt.Errorf("unknown scope %q (want credential, workflow or host)", s)
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
