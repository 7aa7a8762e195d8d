package rules

import (
	"fmt"
	"net/textproto"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// Parse parses and validates one rule file; file names it in messages and
// becomes API.File. Every problem of the file is reported, in a *Errors.
func Parse(file string, data []byte) (*API, error) {
	d := &decoder{file: file}
	api := d.ruleFile(data)
	if err := d.errs.err(); err != nil {
		return nil, err
	}
	return api, nil
}

// parseYAML runs the YAML parser, turning a panic of it into an error: a
// strange file must not take the proxy down.
func parseYAML(data []byte) (f *ast.File, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("parser failed: %v", p)
		}
	}()
	return parser.ParseBytes(data, 0)
}

// ruleFile parses the YAML of a rule file and reads its one document as
// a file of routes or, when it has an mcp: field, of an MCP server's
// tools.
func (d *decoder) ruleFile(data []byte) *API {
	f, err := parseYAML(data)
	if err != nil {
		d.yamlError(err)
		return nil
	}
	var docs []*ast.DocumentNode
	for _, doc := range f.Docs {
		if doc.Body != nil {
			docs = append(docs, doc)
		}
	}
	if len(docs) == 0 {
		d.errs.add(Pos{File: d.file, Line: 1, Col: 1}, "empty rule file (want api, hosts and routes)")
		return nil
	}
	if len(docs) > 1 {
		d.errorf(docs[1].Body, "a rule file holds one yaml document (describe one api per file)")
	}
	d.collectAnchors(docs[0].Body)
	if d.isMCP(docs[0].Body) {
		return d.mcpAPI(docs[0].Body)
	}
	return d.api(docs[0].Body)
}

// require returns the field, or reports it missing at node at (the
// mapping's own key, when it has one); ctx names the mapping.
func (d *decoder) require(at ast.Node, ctx string, fs map[string]entry, key string) (entry, bool) {
	e, ok := fs[key]
	if !ok && ctx == "" {
		d.errorf(at, "missing field %q", key)
	} else if !ok {
		d.errorf(at, "%s: missing field %q", ctx, key)
	}
	return e, ok
}

// headerName reads and canonicalizes a header name.
func (d *decoder) headerName(e entry, name string) string {
	s, ok := d.str(e.val, name)
	if !ok {
		return ""
	}
	if !validToken(s) {
		d.errorf(e.val, "%s: invalid header name %q", name, s)
		return ""
	}
	return textproto.CanonicalMIMEHeaderKey(s)
}
