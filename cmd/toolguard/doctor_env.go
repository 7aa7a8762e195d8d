package main

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/toolguard/toolguard/rules"
)

// proxyVars checks that all four proxy variables are set to one URL: curl
// reads only the lowercase http_proxy, other clients read either case.
func (d *doctor) proxyVars() []finding {
	names := []string{"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy"}
	var set, missing []string
	values := map[string]bool{}
	for _, n := range names {
		if v := d.env[n]; v != "" {
			set = append(set, n)
			values[v] = true
		} else {
			missing = append(missing, n)
		}
	}
	switch {
	case len(set) == 0:
		return []finding{fail(execFix+", or export HTTP_PROXY, http_proxy, HTTPS_PROXY and https_proxy=http://127.0.0.1:8480", "proxy variables: none is set")}
	case len(values) > 1:
		var pairs []string
		for _, n := range set {
			pairs = append(pairs, n+"="+d.env[n])
		}
		return []finding{fail("set all four to the same toolguard URL", "proxy variables disagree: %s", strings.Join(pairs, " "))}
	case len(missing) > 0:
		return []finding{fail("export "+strings.Join(missing, " ")+" as well (curl reads only the lowercase http_proxy; other clients read either case)",
			"proxy variables: %s set, %s missing", strings.Join(set, ", "), strings.Join(missing, ", "))}
	}
	v := d.env["HTTPS_PROXY"]
	u, err := url.Parse(v)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return []finding{fail("use the proxy listener's URL, such as http://127.0.0.1:8480", "proxy variables: %q is not an http:// proxy URL", v)}
	}
	return []finding{ok("proxy variables: HTTP_PROXY, http_proxy, HTTPS_PROXY and https_proxy are %s", v)}
}

// noProxy checks NO_PROXY for forms clients ignore and for the admin
// listener, which toolguard refuses to proxy to. Its advice never adds an
// IP that would also exempt a host the rules guard: a listener on loopback
// is named localhost, as exec names it.
func (d *doctor) noProxy() []finding {
	upper, lower := d.env["NO_PROXY"], d.env["no_proxy"]
	if upper != lower && upper != "" && lower != "" {
		return []finding{fail("set NO_PROXY and no_proxy to the same list", "NO_PROXY=%q and no_proxy=%q disagree", upper, lower)}
	}
	list := upper
	if list == "" {
		list = lower
	}
	var out []finding
	var entries, hosts []string
	for _, e := range strings.Split(list, ",") {
		if e = strings.TrimSpace(e); e != "" {
			entries = append(entries, e)
			hosts = append(hosts, hostOnly(e))
		}
	}
	for _, e := range entries {
		switch {
		case e == "*":
			out = append(out, fail("remove * from NO_PROXY: it sends every call around toolguard", "NO_PROXY: * bypasses the proxy for every host"))
		case hostOnly(e) != e:
			out = append(out, fail(d.portFix(e), "NO_PROXY: entry %q has a port", e))
		}
	}
	if d.underExec() && d.env["TOOLGUARD_ADMIN_URL"] == "" {
		// exec gives the command no admin URL without an agent token: the
		// command has no call to the admin listener to exempt.
		if len(out) == 0 {
			out = append(out, ok("NO_PROXY: %q; toolguard exec gives this command no admin URL (it does with admin.agent_token), so the admin listener needs no entry", strings.Join(entries, ",")))
		}
		return out
	}
	u, err := url.Parse(d.admin)
	if err != nil {
		return noProxyOK(out, entries, "")
	}
	host := u.Hostname()
	switch {
	case slices.Contains(hosts, host):
		return noProxyOK(out, entries, "")
	case localhostNamed(host) && slices.Contains(hosts, "localhost"):
		return noProxyOK(out, entries, agentAdminURL(d.admin))
	}
	return append(out, fail(d.adminFix(host), "NO_PROXY: the admin listener's host %s is not listed", host))
}

// noProxyOK is the findings so far, or, when there are none, one that says
// NO_PROXY is right; asLocalhost is the admin URL to use when localhost
// covers the admin listener under another name.
func noProxyOK(out []finding, entries []string, asLocalhost string) []finding {
	switch {
	case len(out) > 0:
		return out
	case asLocalhost != "":
		return []finding{ok("NO_PROXY: %s (host-only entries; localhost covers the admin listener: reach it as %s)", strings.Join(entries, ","), asLocalhost)}
	}
	return []finding{ok("NO_PROXY: %s (host-only entries, admin listener included)", strings.Join(entries, ","))}
}

// localhostNamed reports whether a listener on host is reached as
// localhost: the loopback addresses localhost resolves to, and every
// address.
func localhostNamed(host string) bool {
	switch host {
	case "localhost", "127.0.0.1", "::1", "0.0.0.0", "::":
		return true
	}
	return false
}

const refusesAdmin = "toolguard refuses to proxy calls to its own admin listener"

// adminFix is the advice when nothing in NO_PROXY covers the admin
// listener's host.
func (d *doctor) adminFix(host string) string {
	if localhostNamed(host) {
		return fmt.Sprintf("add localhost to NO_PROXY and no_proxy and reach the admin API as %s (%s; an entry for %s would also exempt every other service on it, such as an API toolguard guards)",
			agentAdminURL(d.admin), refusesAdmin, host)
	}
	if g := d.guardedAt(host); g != "" {
		return fmt.Sprintf("reach the admin API by a host name of its own (DNS or /etc/hosts) and add that name to NO_PROXY and no_proxy (%s; an entry for %s would also exempt %s, which the rules guard)",
			refusesAdmin, host, g)
	}
	return fmt.Sprintf("add %s to NO_PROXY and no_proxy (%s)", host, refusesAdmin)
}

// portFix is the advice for a NO_PROXY entry with a port, which curl
// ignores: the host alone, unless that would exempt more than meant.
func (d *doctor) portFix(entry string) string {
	host := hostOnly(entry)
	_, port, _ := net.SplitHostPort(entry)
	switch {
	case localhostNamed(host) && host != "localhost":
		return fmt.Sprintf("list localhost instead and call that service as localhost:%s (curl ignores entries with a port, and %s alone would also exempt every other service on it, such as an API toolguard guards)", port, host)
	case d.guardedAt(host) != "":
		return fmt.Sprintf("remove the entry, or reach that service by a host name of its own and list the name (curl ignores entries with a port, and %s alone would also exempt %s, which the rules guard)", host, d.guardedAt(host))
	}
	return fmt.Sprintf("write the host alone: %s (curl ignores entries with a port)", host)
}

// guardedAt returns a host of the rules (host:port as written) on the IP
// address ip, or "" when there is none, ip is a name or the rules do not
// load.
func (d *doctor) guardedAt(ip string) string {
	if net.ParseIP(ip) == nil || d.cfg.Rules.Dir == "" {
		return ""
	}
	set, err := rules.Load(d.cfg.Rules.Dir)
	if err != nil {
		return ""
	}
	for _, a := range set.APIs {
		for _, h := range a.Hosts {
			if hostOnly(h) == ip {
				return h
			}
		}
	}
	return ""
}
