package rules

import "github.com/goccy/go-yaml/ast"

// This file parses the fields every rule file opens with, REST or MCP:
// version, api, hosts, credential (credential.go) and guard
// (parse_guard.go).

// fileKind is what a kind of rule file, of routes or of an MCP server's
// tools, adds to the header every rule file opens with.
type fileKind struct {
	// fields are the top-level fields the kind knows, the header's
	// included.
	fields []string
	// hostsOptional lets a file leave out hosts (an MCP server that is
	// reached through the gateway alone).
	hostsOptional bool
	// section, when not nil, reads the kind's own section, which comes
	// after api in the file's order of fields (an MCP file's mcp:).
	section func(d *decoder, api *API, fs map[string]entry)
}

// header reads the top mapping n of a rule file of the given kind and,
// into api, the fields every rule file opens with: version, api, the
// kind's section, hosts, credential and guard, in that order. It returns the
// mapping's fields for the kind to read the rest; ok is false when n is
// not a mapping.
func (d *decoder) header(n ast.Node, kind fileKind, api *API) (fs map[string]entry, ok bool) {
	if fs, ok = d.mapping(n, "rule file", kind.fields...); !ok {
		return nil, false
	}
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
	if kind.section != nil {
		kind.section(d, api, fs)
	}
	if kind.hostsOptional {
		if e, ok := fs["hosts"]; ok {
			d.hosts(api, e)
		}
	} else if e, ok := d.require(n, "", fs, "hosts"); ok {
		d.hosts(api, e)
	}
	if e, ok := fs["credential"]; ok {
		d.credential(api, e)
	}
	if e, ok := fs["guard"]; ok {
		d.guard(api, e)
	}
	return fs, true
}

// hosts reads hosts: the host names (and ports) whose requests the file
// describes.
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
