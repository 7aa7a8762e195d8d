// Package rules loads the per-API rule files that tell toolguard which calls
// have side effects, and turns a request into the idempotency key of its
// business intent. It is pure code: it reads rule files and nothing else.
//
// # Rule files
//
// A rule file describes one external API: its hosts, the header that carries
// its credential, and its side-effecting routes (see DESIGN.md, "Rule
// files"). Load validates every file strictly and reports each problem as
// file:line:col: message, all problems of all files at once (*Errors).
// Anchors and aliases may share parts of a file; merge keys and tags may
// not.
//
// # Matching
//
// Set.Match picks the API by host (exact host:port, then host on any port,
// then the longest "*.domain"), then the most specific route pattern of the
// request's method, with net/http ServeMux semantics. Patterns that
// ServeMux would refuse as conflicting are load errors. A write that no
// route of the host's file matches gets the file's route of unlisted
// writes (UnlistedRoute) under unlisted: guard, the default; see
// unlisted.go.
//
// # Keys
//
// A key is the hex sha256 of the canonical form of {api, route, scope values,
// path values, query, the body's media type, selected body fields}
// (docs/keys.md says what each holds and why). Canonical JSON has sorted keys
// and normalised numbers; form bodies and query strings become sorted key →
// values. Two requests that differ only in field order, whitespace or
// ignored fields get the same key. Numbers are written in RFC 8785 notation
// but keep their exact decimal value (1.0 and 1e0 are 1, 1e21 is 1e+21, and
// a 25-digit integer keeps all its digits) instead of being rounded to
// binary64. Strings keep their exact code points (NFC and NFD differ). A
// key field whose path has an index or '#' step also keys the kind of
// container each step went through (an array index 0 is not a member "0"),
// and a {name...} path value keeps an escaped '/' apart from a '/'. The
// credential and redacted fields enter the key only as HMACs under
// Deriver.Secret.
//
// Derive refuses, rather than keys, what could give two intents one key: a
// body lacking a required key field (*MissingFieldsError; key.optional
// names the fields a body may lack), a body that cannot be what its
// Content-Type declares (JSON sent as a form), and JSON or form bytes that
// are not UTF-8. A route with key.reference never refuses for a missing
// field: without its reference it keys the whole request, less the file's
// volatile fields, as an unlisted write does. A body of any other type,
// or of none that is not JSON, is keyed by its content hash. Package
// rules/samples tests a rule file against sample requests.
//
// Multipart bodies become an object of part name → text, or for a file
// part {content_sha256, content_type, filename, size}, its content hashed
// as it is read and its filename exactly as sent, directories included. A route with key.content: sha256 keys any body as bytes
// by its hash.
//
// # Request-side features
//
// Routes of one GraphQL endpoint are told apart by SelectGraphQL from the
// operation in the body (graphql: {operation, field}); a query no route
// selects passes through. Route.Apply writes a route's inject field (the
// key where the provider stores it) and conditional header into every
// outbound request; the injected field never counts in the key. Effect
// none marks a write method that only reads; it needs a reason.
//
// # Approval and budgets
//
// approval: {when: EXPR} is a CEL expression over the canonical body, the
// query, the path values and the headers (credentials left out), compiled
// when the rules load (its errors point into the YAML string) and
// evaluated by Route.NeedsApproval, which holds the intent when the
// expression is true or cannot be evaluated. budget: {calls, per} is
// plain data (Budget) that the proxy hands the journal. Package
// rules/samples tells which samples either would hold.
//
// # Templates
//
// Lookup and verification URLs are templates with {{key}},
// {{operation_id}}, {{path.NAME}}, {{body.PATH}} and {{response.PATH}};
// operation_id may be a template of {{response.PATH}} and {{header.NAME}}
// for composite ids.
// They are checked when rules load; at run time a missing value is
// ErrMissingValue, which callers treat as "cannot query".
package rules
