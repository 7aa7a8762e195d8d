package rules

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// args parses the arguments of a lookup's or verification's tool call:
// YAML mapped to JSON, with templates in strings. {{arguments.PATH}} is
// another spelling of {{body.PATH}} (the call's arguments are its body),
// {{result.PATH}} reads the stored tool result. A lookup runs before any
// result is known, so it may not use {{operation_id}} or {{result.*}}.
func (d *decoder) args(r *Route, n ast.Node, name string, inLookup bool) *ArgsTemplate {
	switch v := d.resolve(n).(type) {
	case *ast.MappingNode:
		a := &ArgsTemplate{object: []argMember{}}
		seen := map[string]bool{}
		for _, mv := range v.Values {
			k, ok := d.scalarText(mv.Key, name+" key")
			if !ok {
				continue
			}
			if seen[k] {
				d.errorf(mv.Key, "%s: duplicate field %q", name, k)
				continue
			}
			seen[k] = true
			a.object = append(a.object, argMember{name: k, val: d.args(r, mv.Value, name+"."+k, inLookup)})
		}
		return a
	case *ast.SequenceNode:
		a := &ArgsTemplate{array: []*ArgsTemplate{}}
		for i, it := range v.Values {
			a.array = append(a.array, d.args(r, it, fmt.Sprintf("%s[%d]", name, i), inLookup))
		}
		return a
	case *ast.StringNode, *ast.LiteralNode:
		s, _ := d.str(v, name)
		return d.argString(r, v, s, name, inLookup)
	case *ast.NullNode:
		return &ArgsTemplate{lit: json.RawMessage("null")}
	}
	s, ok := d.scalarText(d.resolve(n), name)
	if !ok {
		return &ArgsTemplate{lit: json.RawMessage("null")}
	}
	return &ArgsTemplate{lit: json.RawMessage(s)}
}

func (d *decoder) argString(r *Route, n ast.Node, s, name string, inLookup bool) *ArgsTemplate {
	src := strings.ReplaceAll(s, "{{arguments.", "{{body.")
	src = strings.ReplaceAll(src, "{{result.", "{{response.result.")
	t, err := ParseTemplate(src)
	if err != nil {
		var te *TemplateError
		if errors.As(err, &te) {
			d.errorf(n, "%s: %s", name, strings.Replace(te.Msg, "(want key, operation_id, path.NAME, body.PATH or response.PATH)", "(want key, operation_id, arguments.PATH or result.PATH)", 1))
		}
		return &ArgsTemplate{lit: json.RawMessage(`""`)}
	}
	for _, p := range t.refs() {
		switch {
		case inLookup && (p.ref == refOperationID || p.ref == refResponse):
			d.errorf(n, "%s: %s is not known before the lookup answers (use {{key}} or {{arguments.PATH}})", name, strings.Replace(p.String(), "response.result.", "result.", 1))
		case p.ref == refOperationID && r.OperationID.Source == SourceNone && (r.Lookup == nil || r.Lookup.OperationID.Source == SourceNone):
			d.errorf(n, "%s: {{operation_id}} needs operation_id on the tool (or on its lookup)", name)
		case p.ref == refPath:
			d.errorf(n, "%s: %s: an MCP tool has no path wildcards", name, p)
		}
	}
	return &ArgsTemplate{str: t}
}
