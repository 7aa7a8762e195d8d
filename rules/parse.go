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
	api := d.file1(data)
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

func (d *decoder) file1(data []byte) *API {
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

func (d *decoder) api(n ast.Node) *API {
	fs, ok := d.mapping(n, "rule file", "version", "api", "hosts", "credential", "errors", "routes")
	if !ok {
		return nil
	}
	api := &API{File: d.file, Pos: d.pos(n)}
	if e, ok := fs["version"]; ok {
		if s, isStr := e.val.(*ast.StringNode); !isStr || s.Value != "v1" {
			d.errorf(e.val, "version: unknown version %q (want v1)", e.val.GetToken().Value)
		}
	}
	if e, ok := d.require(n, "", fs, "api"); ok {
		api.Pos, api.keyPos = d.pos(e.val), d.pos(e.node)
		if api.Name, ok = d.str(e.val, "api"); ok && !lowerName(api.Name) {
			d.errorf(e.val, "api: invalid name %q (want lowercase letters, digits, _ and -)", api.Name)
		}
	}
	if e, ok := d.require(n, "", fs, "hosts"); ok {
		d.hosts(api, e)
	}
	if e, ok := fs["credential"]; ok {
		d.credential(api, e)
	}
	if e, ok := fs["errors"]; ok {
		api.Errors = d.errorFormat(e)
	}
	if e, ok := d.require(n, "", fs, "routes"); ok {
		d.routes(api, e)
	}
	return api
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

func (d *decoder) hosts(api *API, e entry) {
	hosts, nodes, ok := d.strs(e, "hosts")
	if !ok {
		return
	}
	if len(hosts) == 0 {
		d.errorf(e.val, "hosts: empty (want at least one host)")
	}
	seen := make(map[hostKey]bool)
	for i, h := range hosts {
		k, wild, err := parseRuleHost(h)
		if err != nil {
			d.errorf(nodes[i], "hosts[%d]: invalid host %q: %v", i, h, err)
			continue
		}
		if wild {
			k.host = "*." + k.host
		}
		if seen[k] {
			d.errorf(nodes[i], "hosts[%d]: duplicate host %q", i, h)
			continue
		}
		seen[k] = true
		api.Hosts = append(api.Hosts, h)
		api.hostPositions = append(api.hostPositions, d.pos(nodes[i]))
	}
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

func (d *decoder) routes(api *API, e entry) {
	items, ok := d.list(e, "routes")
	if !ok {
		return
	}
	if len(items) == 0 {
		d.errorf(e.val, "routes: empty (want at least one route)")
	}
	names := make(map[string]*Route)
	for _, it := range items {
		r := d.route(api, it)
		if r == nil {
			continue
		}
		if r.Name != "" {
			if prev := names[r.Name]; prev != nil {
				d.errs.add(r.Pos, "name: duplicate route name %q (also at %s)", r.Name, prev.Pos)
				continue
			}
			names[r.Name] = r
		}
		api.Routes = append(api.Routes, r)
	}
	d.conflicts(api.Routes)
	d.sameLookupRates(api.Routes)
}
