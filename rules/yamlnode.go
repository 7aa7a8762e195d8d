package rules

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"

	"github.com/toolguard/toolguard/internal/suggest"
)

// This file is the YAML layer of the rule parser: it reads goccy/go-yaml's
// AST, so that every problem has a line and column, and keeps going after
// one so that a file's problems are reported together.

// decoder walks the AST of one file and collects errors.
type decoder struct {
	file    string
	errs    Errors
	anchors map[string]ast.Node
}

// entry is one key: value of a mapping.
type entry struct {
	key  string
	node ast.Node // the key
	val  ast.Node // the value, anchors and aliases resolved
}

func (d *decoder) pos(n ast.Node) Pos {
	if m, ok := n.(*ast.MappingNode); ok && len(m.Values) > 0 {
		n = m.Values[0].Key // a block mapping's token is its first ':'
	}
	if n == nil || n.GetToken() == nil {
		return Pos{File: d.file, Line: 1, Col: 1}
	}
	p := n.GetToken().Position
	return Pos{File: d.file, Line: p.Line, Col: p.Column}
}

func (d *decoder) errorf(n ast.Node, format string, args ...any) {
	d.errs.add(d.pos(n), format, args...)
}

// yamlError reports a syntax error of the YAML parser.
func (d *decoder) yamlError(err error) {
	var ye yaml.Error
	if errors.As(err, &ye) && ye.GetToken() != nil {
		p := ye.GetToken().Position
		d.errs.add(Pos{File: d.file, Line: p.Line, Col: p.Column}, "yaml: %s", ye.GetMessage())
		return
	}
	d.errs.add(Pos{File: d.file, Line: 1, Col: 1}, "yaml: %v", err)
}

// collectAnchors records every &anchor so that aliases can be resolved.
func (d *decoder) collectAnchors(n ast.Node) {
	d.anchors = make(map[string]ast.Node)
	ast.Walk(anchorVisitor(d.anchors), n)
}

type anchorVisitor map[string]ast.Node

func (v anchorVisitor) Visit(n ast.Node) ast.Visitor {
	if a, ok := n.(*ast.AnchorNode); ok && a.Name != nil {
		v[a.Name.GetToken().Value] = a.Value
	}
	return v
}

// resolve follows anchors and aliases to the value node.
func (d *decoder) resolve(n ast.Node) ast.Node {
	for range 64 {
		switch v := n.(type) {
		case *ast.AnchorNode:
			n = v.Value
		case *ast.AliasNode:
			target, ok := d.anchors[v.Value.GetToken().Value]
			if !ok {
				return n
			}
			n = target
		default:
			return n
		}
	}
	return n
}

// describe names a node's type and value for messages: `string "x"`,
// `number 5`, `a mapping`.
func describe(n ast.Node) string {
	switch v := n.(type) {
	case *ast.StringNode:
		return fmt.Sprintf("string %q", v.Value)
	case *ast.LiteralNode:
		return fmt.Sprintf("string %q", v.Value.Value)
	case *ast.IntegerNode, *ast.FloatNode, *ast.InfinityNode, *ast.NanNode:
		return "number " + n.GetToken().Value
	case *ast.BoolNode:
		return "bool " + n.GetToken().Value
	case *ast.NullNode, nil:
		return "null"
	case *ast.MappingNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.TagNode:
		return "tag " + v.Start.Value
	case *ast.AliasNode:
		return "unknown alias *" + v.Value.GetToken().Value
	}
	return n.Type().String()
}

// mapping checks the value is a mapping whose keys are all among known,
// and returns its entries by key. name is the field path for messages.
func (d *decoder) mapping(n ast.Node, name string, known ...string) (map[string]entry, bool) {
	m, ok := d.resolve(n).(*ast.MappingNode)
	if !ok {
		d.errorf(n, "%s: want a mapping (got %s)", name, describe(d.resolve(n)))
		return nil, false
	}
	out := make(map[string]entry, len(m.Values))
	for _, mv := range m.Values {
		if mv.Key.IsMergeKey() {
			d.errorf(mv.Key, "merge keys (<<) are not supported")
			continue
		}
		key, ok := mv.Key.(*ast.StringNode)
		if !ok {
			d.errorf(mv.Key, "%s: keys must be strings (got %s)", name, describe(mv.Key))
			continue
		}
		switch {
		case !contains(known, key.Value):
			d.errorf(mv.Key, "unknown field %q%s", key.Value, suggest.Hint(key.Value, known))
		case out[key.Value].node != nil:
			d.errorf(mv.Key, "duplicate field %q", key.Value)
		default:
			out[key.Value] = entry{key: key.Value, node: mv.Key, val: d.resolve(mv.Value)}
		}
	}
	return out, true
}

// list checks the value is a sequence and returns its items, resolved.
func (d *decoder) list(e entry, name string) ([]ast.Node, bool) {
	s, ok := e.val.(*ast.SequenceNode)
	if !ok {
		d.errorf(e.val, "%s: want a list (got %s)", name, describe(e.val))
		return nil, false
	}
	items := make([]ast.Node, len(s.Values))
	for i, v := range s.Values {
		items[i] = d.resolve(v)
	}
	return items, true
}

// str reads a string value.
func (d *decoder) str(n ast.Node, name string) (string, bool) {
	switch v := n.(type) {
	case *ast.StringNode:
		return v.Value, true
	case *ast.LiteralNode:
		return v.Value.Value, true
	}
	d.errorf(n, "%s: want a string (got %s)", name, describe(n))
	return "", false
}

// strs reads a list of strings.
func (d *decoder) strs(e entry, name string) ([]string, []ast.Node, bool) {
	items, ok := d.list(e, name)
	if !ok {
		return nil, nil, false
	}
	out := make([]string, 0, len(items))
	for i, it := range items {
		s, ok2 := d.str(it, fmt.Sprintf("%s[%d]", name, i))
		ok = ok && ok2
		out = append(out, s)
	}
	return out, items, ok
}

// scalarText is the string form of a scalar for expected body values:
// strings as they are, numbers in decimal, booleans as true or false.
func (d *decoder) scalarText(n ast.Node, name string) (string, bool) {
	switch v := n.(type) {
	case *ast.StringNode, *ast.LiteralNode:
		return d.str(n, name)
	case *ast.IntegerNode:
		return fmt.Sprint(v.Value), true
	case *ast.FloatNode:
		if !math.IsInf(v.Value, 0) && !math.IsNaN(v.Value) {
			return strconv.FormatFloat(v.Value, 'f', -1, 64), true
		}
	case *ast.BoolNode:
		return strconv.FormatBool(v.Value), true
	}
	d.errorf(n, "%s: want a string, number or bool (got %s)", name, describe(n))
	return "", false
}

// integer reads an integer value.
func (d *decoder) integer(n ast.Node, name string) (int, bool) {
	if v, ok := n.(*ast.IntegerNode); ok {
		switch x := v.Value.(type) {
		case int64:
			if x >= math.MinInt32 && x <= math.MaxInt32 {
				return int(x), true
			}
		case uint64:
			if x <= math.MaxInt32 {
				return int(x), true
			}
		}
	}
	d.errorf(n, "%s: want an integer (got %s)", name, describe(n))
	return 0, false
}

// at is the position of byte off of a string value, when the value is on
// one line: past the opening quote of a quoted scalar.
func (d *decoder) at(n ast.Node, off int) Pos {
	p := d.pos(n)
	if tk := n.GetToken(); tk != nil && (tk.Type == token.SingleQuoteType || tk.Type == token.DoubleQuoteType) {
		off++
	}
	p.Col += off
	return p
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// lower reports whether s is a non-empty run of [a-z0-9_-].
func lowerName(s string) bool {
	if s == "" {
		return false
	}
	return strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-')
	}) < 0
}

// duration reads a positive duration, such as 30s or 2m.
func (d *decoder) duration(e entry, name string) time.Duration {
	s, ok := d.str(e.val, name)
	if !ok {
		return 0
	}
	dur, err := time.ParseDuration(s)
	switch {
	case err != nil:
		d.errorf(e.val, "%s: invalid duration %q (want e.g. 30s or 2m)", name, s)
	case dur <= 0:
		d.errorf(e.val, "%s: must be > 0 (got %s)", name, s)
	}
	return dur
}
