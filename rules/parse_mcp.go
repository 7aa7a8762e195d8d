package rules

import (
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// This file parses rule files that describe an MCP server:
//
//	api: tickets
//	mcp: {path: /mcp}              # the endpoint's path (default /mcp)
//	hosts: [tickets.example.com]   # optional: for the forward proxy
//	credential: {header: Authorization}   # the default for MCP files
//	tools:
//	  - name: create_ticket
//	    effect: irreversible
//	    key: {fields: [project, title]}   # paths into params.arguments
//	    operation_id: result:structuredContent.id
//	    lookup:
//	      tool: find_ticket
//	      arguments: {title: "{{arguments.title}}"}
//	      found: {result: {structuredContent.count: 1}}
//	      absent: {result: {structuredContent.count: 0}}
//	      operation_id: result:structuredContent.id
//	    approval: none                    # or required, or {when: CEL}
//	    budget: {calls: 20, per: 1m}      # optional

var (
	toolFields      = []string{"name", "effect", "key", "operation_id", "lookup", "verify", "approval", "budget"}
	toolVerifyField = []string{"tool", "arguments", "expect", "within", "mode"}
	toolLookupField = []string{"tool", "arguments", "found", "absent", "operation_id"}
)

// isMCP reports whether the file's top mapping has an mcp: field.
func (d *decoder) isMCP(n ast.Node) bool {
	m, ok := d.resolve(n).(*ast.MappingNode)
	if !ok {
		return false
	}
	for _, mv := range m.Values {
		if k, ok := mv.Key.(*ast.StringNode); ok && k.Value == "mcp" {
			return true
		}
	}
	return false
}

// mcpFile is a rule file of an MCP server's tools.
var mcpFile = fileKind{
	fields:        []string{"version", "api", "mcp", "hosts", "credential", "guard", "tools"},
	hostsOptional: true,
	section:       (*decoder).mcpSection,
}

// mcpAPI reads a rule file of an MCP server's tools.
func (d *decoder) mcpAPI(n ast.Node) *API {
	api := &API{File: d.file, Pos: d.pos(n), MCP: &MCP{Path: "/mcp"}}
	api.SetCredential([]string{"Authorization"}, false)
	fs, ok := d.header(n, mcpFile, api)
	if !ok {
		return nil
	}
	if e, ok := d.require(n, "", fs, "tools"); ok {
		d.tools(api, e)
	}
	return api
}

// mcpSection reads mcp: {path}, the endpoint's path.
func (d *decoder) mcpSection(api *API, fs map[string]entry) {
	sec, ok := d.mapping(fs["mcp"].val, "mcp", "path")
	if !ok {
		return
	}
	p, ok := sec["path"]
	if !ok {
		return
	}
	if s, ok := d.str(p.val, "mcp.path"); ok {
		if !strings.HasPrefix(s, "/") || strings.ContainsAny(s, "?# {}") {
			d.errorf(p.val, "mcp.path: want an absolute path such as /mcp (got %q)", s)
			return
		}
		api.MCP.Path = s
	}
}

func (d *decoder) tools(api *API, e entry) {
	items, ok := d.list(e, "tools")
	if !ok {
		return
	}
	if len(items) == 0 {
		d.errorf(e.val, "tools: empty (want at least one tool)")
	}
	api.MCP.Tools = make(map[string]*Route, len(items))
	for _, it := range items {
		r := d.tool(api, it)
		if r == nil || r.Name == "" {
			continue
		}
		if prev := api.MCP.Tools[r.Name]; prev != nil {
			d.errs.add(r.Pos, "name: duplicate tool %q (also at %s)", r.Name, prev.Pos)
			continue
		}
		api.MCP.Tools[r.Name] = r
	}
}

// tool parses one entry of tools into the route the proxy guards it by.
func (d *decoder) tool(api *API, n ast.Node) *Route {
	fs, ok := d.mapping(n, "tool", toolFields...)
	if !ok {
		return nil
	}
	r := &Route{API: api, Pos: d.pos(n), Method: "POST", Pattern: api.MCP.Path}
	ctx := d.name(n, fs, r, "tool")
	if e, ok := d.require(n, ctx, fs, "effect"); ok {
		d.effect(r, e)
	}
	if e, ok := fs["key"]; ok {
		d.key(r, e)
	}
	if e, ok := fs["operation_id"]; ok {
		if x, ok := d.resultPath(e, "operation_id"); ok {
			r.OperationID = Extractor{Source: SourceBody, Path: "result." + x}
		}
	}
	if e, ok := fs["lookup"]; ok {
		r.Lookup = d.toolLookup(r, e)
	}
	if e, ok := fs["verify"]; ok {
		r.Verify = d.toolVerify(r, e)
	}
	if e, ok := fs["approval"]; ok {
		d.approval(r, e)
	}
	if e, ok := fs["budget"]; ok {
		r.Budget = d.budget(e)
	}
	if r.Effect == EffectSafe && (r.Lookup != nil || r.Verify != nil || r.ApprovalRequired || r.ApprovalWhen != nil) {
		d.errorf(fs["effect"].val, "effect: a safe tool passes through unguarded; lookup, verify and approval would never apply")
	}
	if b, ok := fs["budget"]; ok && r.Effect == EffectSafe {
		d.errorf(b.node, "budget: a safe tool passes through unguarded; a budget would never apply")
	}
	return r
}

// resultPath reads "result:<gjson path>", a path into a tool result.
func (d *decoder) resultPath(e entry, name string) (string, bool) {
	s, ok := d.str(e.val, name)
	if !ok {
		return "", false
	}
	p, ok := strings.CutPrefix(s, "result:")
	if !ok {
		d.errorf(e.val, "%s: want result:<gjson path into the tool result> (got %q)", name, s)
		return "", false
	}
	if err := validPath(p); err != nil {
		d.errorf(e.val, "%s: invalid gjson path %q: %v", name, p, err)
		return "", false
	}
	return p, true
}

func (d *decoder) toolLookup(r *Route, e entry) *Lookup {
	fs, ok := d.mapping(e.val, "lookup", toolLookupField...)
	if !ok {
		return nil
	}
	l := &Lookup{Request: Request{Tool: d.toolCall(r, e, fs, "lookup", true)}}
	if x, ok := fs["operation_id"]; ok {
		if p, ok := d.resultPath(x, "lookup.operation_id"); ok {
			l.OperationID = Extractor{Source: SourceBody, Path: p}
		}
	}
	if x, ok := fs["found"]; ok {
		l.Found = d.resultExpectation(x, "lookup.found")
	} else {
		d.errorf(e.node, "lookup: missing field \"found\" (what a result that found the effect looks like)")
	}
	if x, ok := fs["absent"]; ok {
		l.Absent = d.resultExpectation(x, "lookup.absent")
	}
	return l
}

// toolCall reads the tool and arguments of a lookup or verify (ctx).
func (d *decoder) toolCall(r *Route, e entry, fs map[string]entry, ctx string, inLookup bool) *ToolCall {
	tc := &ToolCall{}
	if x, ok := d.require(e.node, ctx, fs, "tool"); ok {
		if tc.Name, ok = d.str(x.val, ctx+".tool"); ok && !validRouteName(tc.Name) {
			d.errorf(x.val, "%s.tool: invalid tool name %q", ctx, tc.Name)
		}
	}
	if x, ok := fs["arguments"]; ok {
		if _, isMap := x.val.(*ast.MappingNode); !isMap {
			d.errorf(x.val, "%s.arguments: want a mapping (got %s)", ctx, describe(x.val))
		} else {
			tc.Arguments = d.args(r, x.val, ctx+".arguments", inLookup)
		}
	}
	if tc.Arguments == nil {
		tc.Arguments = &ArgsTemplate{object: []argMember{}}
	}
	return tc
}

// toolVerify reads verify: a tool call that shows the effect, expected to
// meet expect within the given time.
func (d *decoder) toolVerify(r *Route, e entry) *Verify {
	fs, ok := d.mapping(e.val, "verify", toolVerifyField...)
	if !ok {
		return nil
	}
	v := &Verify{Request: Request{Tool: d.toolCall(r, e, fs, "verify", false)}}
	if x, ok := d.require(e.node, "verify", fs, "expect"); ok {
		if exp := d.resultExpectation(x, "verify.expect"); exp != nil {
			v.Expect = *exp
		}
	}
	d.verifyTiming(e, fs, v)
	return v
}

// resultExpectation reads {result: {PATH: VALUE}, contains: TEXT}: paths
// into the tool result, and a substring of it.
func (d *decoder) resultExpectation(e entry, name string) *Expectation {
	fs, ok := d.mapping(e.val, name, "result", "contains")
	if !ok {
		return nil
	}
	x := &Expectation{}
	if b, ok := fs["result"]; ok {
		x.Body = d.bodyMatches(b, name+".result")
	}
	if c, ok := fs["contains"]; ok {
		if x.Contains, ok = d.str(c.val, name+".contains"); ok && x.Contains == "" {
			d.errorf(c.val, "%s.contains: empty string", name)
		}
	}
	if len(fs) == 0 {
		d.errorf(e.node, "%s: empty expectation would match every result (want result or contains)", name)
	}
	return x
}
