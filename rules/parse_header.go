package rules

// This file parses the fields every rule file opens with, REST or MCP:
// version, api, hosts and credential (credential.go).

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
