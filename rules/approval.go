package rules

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
)

// This file compiles and evaluates approval.when: a CEL expression over a
// request that says whether its new intent waits for an operator.

// Condition is a compiled approval.when expression. It is safe for
// concurrent use.
type Condition struct {
	// Expr is the expression as the rule file wrote it.
	Expr string
	// Pos is where the expression is written, for messages.
	Pos Pos

	prg cel.Program
}

// ConditionCostLimit bounds the work of one evaluation, in CEL's cost
// units (about one per operation, and one per element a macro visits):
// an evaluation that exceeds it is an error, so the intent is held.
const ConditionCostLimit = 100_000

// maxConditionLen bounds an expression's length, in code points.
const maxConditionLen = 4096

// The variables an expression reads (docs/rules.md, "approval").
const (
	varBody    = "body"
	varQuery   = "query"
	varPath    = "path"
	varHeaders = "headers"
)

// conditionEnv is the CEL environment of every expression: the four
// variables and CEL's standard library, with numbers of different types
// comparable (a JSON number, a double, compares with 10000). Its macros are
// CEL's own (has, all, exists, exists_one, map, filter), each bounded by
// the size of what it walks; there are no others.
var conditionEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable(varBody, cel.DynType),
		cel.Variable(varQuery, cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable(varPath, cel.MapType(cel.StringType, cel.StringType)),
		cel.Variable(varHeaders, cel.MapType(cel.StringType, cel.StringType)),
		cel.CrossTypeNumericComparisons(true),
		cel.ParserExpressionSizeLimit(maxConditionLen),
		cel.ParserRecursionLimit(64),
	)
})

// conditionIssue is one problem of an expression, at its 1-based line and
// 0-based column within the expression.
type conditionIssue struct {
	line, col int
	msg       string
}

// compileCondition compiles expr; it returns the problems found instead
// when there are any.
func compileCondition(expr string) (*Condition, []conditionIssue) {
	env, err := conditionEnv()
	if err != nil {
		return nil, []conditionIssue{{1, 0, "CEL environment: " + err.Error()}}
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		var out []conditionIssue
		for _, e := range iss.Errors() {
			msg := strings.TrimSuffix(e.Message, " (in container '')")
			out = append(out, conditionIssue{max(e.Location.Line(), 1), max(e.Location.Column(), 0), msg})
		}
		return nil, out
	}
	if t := ast.OutputType(); !t.IsExactType(cel.BoolType) {
		return nil, []conditionIssue{{1, 0, fmt.Sprintf("the expression gives %s, want bool (compare the value: body.flag == true)", t)}}
	}
	prg, err := env.Program(ast, cel.CostLimit(ConditionCostLimit))
	if err != nil {
		return nil, []conditionIssue{{1, 0, err.Error()}}
	}
	return &Condition{Expr: expr, prg: prg}, nil
}

// NeedsApproval reports whether a new intent of r waits for an operator's
// approval: always with approval: required; with approval: {when: EXPR},
// when EXPR is true for the request. doc is the canonical body
// (Intent.Doc), in the request's query and path values, h its headers.
//
// An expression that cannot be evaluated (a field it reads is missing, a
// conversion fails, the cost limit is reached) holds the intent as well:
// NeedsApproval then returns true and an error wrapping ErrCondition that
// says why. Guards write has(body.field) to tell a missing field.
func (r *Route) NeedsApproval(doc []byte, in Input, h http.Header) (bool, error) {
	if r.ApprovalRequired {
		return true, nil
	}
	if r.ApprovalWhen == nil {
		return false, nil
	}
	vars, err := r.conditionVars(doc, in, h)
	if err != nil {
		return true, fmt.Errorf("%w: %v", ErrCondition, err)
	}
	out, _, err := r.ApprovalWhen.prg.Eval(vars)
	if err != nil {
		return true, fmt.Errorf("%w: %v", ErrCondition, err)
	}
	b, ok := out.Value().(bool)
	if !ok {
		return true, fmt.Errorf("%w: the expression gave %v, not a bool", ErrCondition, out)
	}
	return b, nil
}

// conditionVars are the variables of an expression for one request:
//
//   - body: the canonical body as JSON values (objects are maps, numbers
//     doubles); a form body is a map of string or list of strings, an
//     empty body null;
//   - query: the query string, a map of string or list of strings;
//   - path: the route's path values;
//   - headers: the request's headers, by lower-case name, the first value
//     of each; the API's credential headers, Authorization,
//     Proxy-Authorization and Cookie are left out.
func (r *Route) conditionVars(doc []byte, in Input, h http.Header) (map[string]any, error) {
	var body any
	if len(doc) > 0 {
		if err := json.Unmarshal(doc, &body); err != nil {
			return nil, fmt.Errorf("read the body: %v", err)
		}
	}
	query := map[string]any{}
	if in.RawQuery != "" {
		c := getCanon()
		q, err := c.form(nil, in.RawQuery, "query string")
		putCanon(c)
		if err != nil {
			return nil, fmt.Errorf("read the query string: %v", err)
		}
		if err := json.Unmarshal(q, &query); err != nil {
			return nil, fmt.Errorf("read the query string: %v", err)
		}
	}
	path := in.PathValues
	if path == nil {
		path = map[string]string{}
	}
	return map[string]any{varBody: body, varQuery: query, varPath: path, varHeaders: r.conditionHeaders(h)}, nil
}

// secretHeaders are left out of an expression's headers on every route,
// whatever the rule file names as its credential.
var secretHeaders = []string{"Authorization", "Proxy-Authorization", "Cookie"}

// conditionHeaders are h by lower-case name, first values only, without
// credentials.
func (r *Route) conditionHeaders(h http.Header) map[string]string {
	out := make(map[string]string, len(h))
	for name, vs := range h {
		canon := http.CanonicalHeaderKey(name)
		if len(vs) == 0 || contains(secretHeaders, canon) || (r.API != nil && contains(r.API.Credentials, canon)) {
			continue
		}
		out[strings.ToLower(name)] = vs[0]
	}
	return out
}
