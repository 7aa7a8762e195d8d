package rules

import (
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
)

// This file parses a route's (or tool's) approval: and budget:
//
//	approval: required                 # or none (the default)
//	approval: {when: 'int(body.amount) > 10000 && body.currency == "eur"'}
//	budget: {calls: 20, per: 1m}

// approval reads approval: none, required, or {when: EXPR}.
func (d *decoder) approval(r *Route, e entry) {
	if _, ok := e.val.(*ast.MappingNode); ok {
		fs, ok := d.mapping(e.val, "approval", "when")
		if !ok {
			return
		}
		w, ok := d.require(e.node, "approval", fs, "when")
		if !ok {
			return
		}
		r.ApprovalWhen = d.condition(w, "approval.when")
		return
	}
	s, ok := d.str(e.val, "approval")
	if !ok {
		return
	}
	switch s {
	case "none":
	case "required":
		r.ApprovalRequired = true
	default:
		d.errorf(e.val, "approval: unknown approval %q (want none, required or {when: EXPR})", s)
	}
}

// condition compiles a CEL expression; each problem is reported where it
// is in the rule file.
func (d *decoder) condition(e entry, name string) *Condition {
	s, ok := d.str(e.val, name)
	if !ok {
		return nil
	}
	if strings.TrimSpace(s) == "" {
		d.errorf(e.val, "%s: empty expression", name)
		return nil
	}
	c, issues := compileCondition(s)
	for _, is := range issues {
		d.errs.add(d.exprPos(e.val, s, is.line, is.col), "%s: %s", name, is.msg)
	}
	if c != nil {
		c.Pos = d.pos(e.val)
	}
	return c
}

// exprPos is the position in the rule file of line and col (1-based,
// 0-based) of expr, the value of string node n: exact for an expression
// on one line, quoted or not, and for a block scalar (| or >) whose lines
// are kept; the start of the value otherwise.
func (d *decoder) exprPos(n ast.Node, expr string, line, col int) Pos {
	lines := strings.Split(expr, "\n")
	if line < 1 || line > len(lines) {
		return d.pos(n)
	}
	col = min(col, len(lines[line-1]))
	switch v := n.(type) {
	case *ast.LiteralNode:
		if v.Start == nil || v.Start.Type != token.LiteralType {
			return d.pos(n) // folded: lines moved
		}
		p := d.pos(n)
		p.Line += line
		p.Col = d.blockIndent(v) + col + 1
		return p
	case *ast.StringNode:
		if len(lines) > 1 {
			return d.pos(n)
		}
		tk := v.GetToken()
		off := col
		switch {
		case tk != nil && tk.Type == token.SingleQuoteType:
			off += strings.Count(expr[:col], "'") // written ''
		case tk != nil && tk.Type == token.DoubleQuoteType:
			off += strings.Count(expr[:col], `"`) + strings.Count(expr[:col], `\`) // escaped
		}
		return d.at(n, off)
	}
	return d.pos(n)
}

// blockIndent is the indentation of a literal block scalar's lines: that
// of its first line, as the YAML source wrote it.
func (d *decoder) blockIndent(v *ast.LiteralNode) int {
	if v.Value == nil || v.Value.GetToken() == nil {
		return 0
	}
	origin := v.Value.GetToken().Origin
	for _, l := range strings.Split(origin, "\n") {
		if t := strings.TrimLeft(l, " "); t != "" {
			return len(l) - len(t)
		}
	}
	return 0
}

// budget reads budget: {calls: N, per: DURATION}.
func (d *decoder) budget(e entry) *Budget {
	fs, ok := d.mapping(e.val, "budget", "calls", "per")
	if !ok {
		return nil
	}
	b := &Budget{}
	if c, ok := d.require(e.node, "budget", fs, "calls"); ok {
		if b.Calls, ok = d.integer(c.val, "budget.calls"); ok && b.Calls < 1 {
			d.errorf(c.val, "budget.calls: must be at least 1 (got %d)", b.Calls)
		}
	}
	if p, ok := d.require(e.node, "budget", fs, "per"); ok {
		b.Per = d.duration(p, "budget.per")
	}
	return b
}
