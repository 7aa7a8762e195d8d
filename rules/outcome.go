package rules

import (
	"fmt"
	"github.com/goccy/go-yaml/ast"
)

// OutcomeKind is what an upstream answer means for the step, beyond its
// status code.
type OutcomeKind uint8

const (
	// OutcomeByStatus: no outcome rule matched; the status decides (2xx
	// and 3xx commit, 4xx fail, 5xx leave the outcome unknown).
	OutcomeByStatus OutcomeKind = iota
	// OutcomeFailure: a definitive failure whatever the status (Slack's
	// 200 {"ok": false}, GraphQL's 200 {"errors": [...]}).
	OutcomeFailure
	// OutcomeRetryable: a failure that did not take effect and may be
	// tried again (a 200 THROTTLED answer).
	OutcomeRetryable
	// OutcomeAccepted: accepted for asynchronous execution; committed, and
	// the route's verification decides whether it happened.
	OutcomeAccepted
	// OutcomeAlreadyDone: the provider says the effect already exists
	// ("already exists", a 404 on DELETE, a 412 with If-None-Match):
	// committed, with evidence saying so.
	OutcomeAlreadyDone
)

var outcomeKindNames = [...]string{"by_status", "failure", "retryable", "accepted", "already_done"}

func (k OutcomeKind) String() string { return outcomeKindNames[k] }

// Outcome classifies upstream answers of a route by their body and
// status; nil fields never match.
type Outcome struct {
	Failure     *Expectation
	Retryable   *Expectation
	Accepted    *Expectation
	AlreadyDone *Expectation
}

// Classify says what an answer below 500 means; 5xx answers are
// ambiguous (the call may have taken effect) and always OutcomeByStatus.
// Rules are tried in the order retryable, failure, already_done,
// accepted: a throttled answer usually also looks like a failure. A nil
// Outcome classifies by status.
func (o *Outcome) Classify(status int, body []byte) OutcomeKind {
	if o == nil || status >= 500 {
		return OutcomeByStatus
	}
	switch {
	case o.Retryable.Match(status, body):
		return OutcomeRetryable
	case o.Failure.Match(status, body):
		return OutcomeFailure
	case o.AlreadyDone.Match(status, body):
		return OutcomeAlreadyDone
	case o.Accepted.Match(status, body):
		return OutcomeAccepted
	}
	return OutcomeByStatus
}

var outcomeFields = []string{"failure", "retryable", "accepted", "already_done"}

// outcome reads a route's outcome rules.
func (d *decoder) outcome(r *Route, e entry) *Outcome {
	fs, ok := d.mapping(e.val, "outcome", outcomeFields...)
	if !ok {
		return nil
	}
	if len(fs) == 0 {
		d.errorf(e.node, "outcome: empty (want failure, retryable, accepted or already_done)")
	}
	o := &Outcome{}
	for _, name := range outcomeFields {
		x, ok := fs[name]
		if !ok {
			continue
		}
		exp := d.outcomeRule(x, "outcome."+name)
		switch name {
		case "failure":
			o.Failure = exp
		case "retryable":
			o.Retryable = exp
		case "accepted":
			o.Accepted = exp
			if r.Verify == nil {
				d.errorf(x.node, "outcome.accepted: needs verify on the route (an accepted call is committed, and its verification says whether it happened)")
			}
		case "already_done":
			o.AlreadyDone = exp
		}
	}
	return o
}

// outcomeRule reads one outcome rule: an expectation, or a list of them
// of which any may match (a GraphQL mutation fails with a top-level
// "errors" list or with its own "userErrors").
func (d *decoder) outcomeRule(x entry, name string) *Expectation {
	if _, isList := x.val.(*ast.SequenceNode); !isList {
		exp := d.expectation(x, name)
		d.no5xx(x, exp, name)
		return exp
	}
	items, _ := d.list(x, name)
	if len(items) == 0 {
		d.errorf(x.val, "%s: empty list (want one or more expectations)", name)
		return nil
	}
	alts := &Expectation{}
	for i, it := range items {
		sub := fmt.Sprintf("%s[%d]", name, i)
		item := entry{key: x.key, node: it, val: it}
		exp := d.expectation(item, sub)
		d.no5xx(item, exp, sub)
		if exp != nil {
			alts.Any = append(alts.Any, exp)
		}
	}
	return alts
}

// no5xx refuses outcome rules on 5xx statuses: such an answer may come
// after the effect happened, so it stays ambiguous.
func (d *decoder) no5xx(x entry, exp *Expectation, name string) {
	if exp == nil {
		return
	}
	for _, st := range exp.Status {
		if st >= 500 {
			at := x.val
			if m, ok := x.val.(*ast.MappingNode); ok {
				for _, mv := range m.Values {
					if mv.Key.GetToken().Value == "status" {
						at = mv.Value
					}
				}
			}
			d.errorf(at, "%s.status: %d is a 5xx answer, which stays ambiguous (the call may have taken effect) and cannot be classified", name, st)
			return
		}
	}
}
