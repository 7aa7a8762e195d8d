package rules

import (
	"slices"
	"strings"

	"github.com/tidwall/gjson"
)

// KeyPlaceholder is the reference a lookup's contains may hold: it stands
// for the step's key (see Bind).
const KeyPlaceholder = "{{key}}"

// Bind returns the expectation with {{key}} in Contains replaced by key; e
// itself when it references nothing.
func (e *Expectation) Bind(key string) *Expectation {
	if e == nil || !strings.Contains(e.Contains, KeyPlaceholder) {
		return e
	}
	b := *e
	b.Contains = strings.ReplaceAll(e.Contains, KeyPlaceholder, key)
	return &b
}

// Match reports whether an answer meets every part of the expectation: the
// status is one of Status (any when empty), each Body path exists and its
// value's string form (gjson's Result.String: numbers as written, true and
// false, strings unquoted) equals the expected value, and the raw body
// contains Contains, and each Present path exists. A body that is not
// valid JSON never meets a Body or Present expectation. A nil Expectation
// matches nothing. An expectation with alternatives (Any) matches when one
// of them does.
func (e *Expectation) Match(status int, body []byte) bool {
	if e == nil {
		return false
	}
	if len(e.Any) > 0 {
		return slices.ContainsFunc(e.Any, func(x *Expectation) bool { return x.Match(status, body) })
	}
	if len(e.Status) > 0 && !slices.Contains(e.Status, status) {
		return false
	}
	if e.Contains != "" && !strings.Contains(bstr(body), e.Contains) {
		return false
	}
	if len(e.Body) == 0 && len(e.Present) == 0 {
		return true
	}
	if !gjson.ValidBytes(body) {
		return false
	}
	doc := bstr(body)
	for _, p := range e.Present {
		if !gjson.Get(doc, p).Exists() {
			return false
		}
	}
	for _, m := range e.Body {
		r := gjson.Get(doc, m.Path)
		if !r.Exists() || r.String() != m.Value {
			return false
		}
	}
	return true
}
