package rules

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Errors of key derivation: classify them with errors.Is.
var (
	// ErrInvalidBody: a guarded request's body (or query string) cannot be
	// reduced to a key: malformed JSON or form data, duplicate object keys,
	// or a content type that is neither JSON nor a form. The wrapping error
	// says which and where; the proxy answers urn:toolguard:invalid-body.
	ErrInvalidBody = errors.New("invalid body")
	// ErrMissingField: a guarded request's body lacks a key field that its
	// route requires (see KeySpec.Optional). The error is a
	// *MissingFieldsError, which also wraps ErrInvalidBody.
	ErrMissingField = errors.New("missing key field")
)

// MissingFieldsError is a request body that lacks required key fields of
// its route. Keying such a body with null in place of the fields would
// give every request that lacks them one key, and answer a different
// intent from the journal; so it is refused. It wraps ErrMissingField and
// ErrInvalidBody.
type MissingFieldsError struct {
	API, Route string
	// Fields are the missing required fields, in the rule's order.
	Fields []string
}

func (e *MissingFieldsError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "route %s/%s: the body lacks required key field", e.API, e.Route)
	if len(e.Fields) > 1 {
		b.WriteByte('s')
	}
	for i, f := range e.Fields {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, " %q", f)
	}
	return b.String()
}

// Unwrap lets errors.Is find ErrMissingField and ErrInvalidBody.
func (e *MissingFieldsError) Unwrap() []error { return []error{ErrMissingField, ErrInvalidBody} }

// Errors of template expansion.
var (
	// ErrMissingValue: a template refers to a value the request, the key or
	// the stored response does not have (or has empty). The external system
	// cannot be queried with that template; callers treat it as "unknown".
	ErrMissingValue = errors.New("missing template value")
)

// Errors of approval.when evaluation.
var (
	// ErrCondition wraps the error of an approval.when evaluation: a field
	// the expression reads is missing, a conversion failed, or the cost
	// limit was reached. The intent is held all the same (see
	// Route.NeedsApproval).
	ErrCondition = errors.New("approval.when could not be evaluated")
)

// Error is one problem in a rule file, at a position.
type Error struct {
	Pos Pos
	Msg string // lowercase, names the field and the offending value
}

func (e *Error) Error() string { return e.Pos.String() + ": " + e.Msg }

// Errors is every problem found while loading rule files, sorted by file,
// line and column. Load, Parse and NewSet return a *Errors for invalid rules
// (and plain wrapped errors for I/O failures); use errors.As to list them.
type Errors struct {
	List []*Error
}

// Error prints one "file:line:col: message" per line.
func (e *Errors) Error() string {
	var b strings.Builder
	for i, x := range e.List {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(x.Error())
	}
	return b.String()
}

func (e *Errors) add(pos Pos, format string, args ...any) {
	e.List = append(e.List, &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)})
}

func (e *Errors) sort() {
	slices.SortStableFunc(e.List, func(a, b *Error) int {
		if c := strings.Compare(a.Pos.File, b.Pos.File); c != 0 {
			return c
		}
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line - b.Pos.Line
		}
		return a.Pos.Col - b.Pos.Col
	})
}

// err returns e sorted, or nil when it holds nothing.
func (e *Errors) err() error {
	if len(e.List) == 0 {
		return nil
	}
	e.sort()
	return e
}

// SyntaxError is malformed JSON, form data or query string. It wraps
// ErrInvalidBody.
type SyntaxError struct {
	What   string // "JSON", "form body" or "query string"
	Offset int    // byte offset of the problem in the input
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid %s at offset %d: %s", e.What, e.Offset, e.Msg)
}

func (e *SyntaxError) Unwrap() error { return ErrInvalidBody }

// TemplateError is a malformed template.
type TemplateError struct {
	Offset int // byte offset of the problem in the template
	Msg    string
}

func (e *TemplateError) Error() string {
	return fmt.Sprintf("template offset %d: %s", e.Offset, e.Msg)
}
