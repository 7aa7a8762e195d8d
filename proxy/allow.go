package proxy

import (
	"net"
	"slices"
	"strconv"
	"strings"
)

// egress decides which targets the proxy may reach, so that it is never an
// open relay: hosts named in rules always; other hosts only when they are
// on the allowlist (when one is set), tunnels only to the allowed ports,
// and never toolguard's own listeners.
type egress struct {
	allow []string // host, host:port or *.suffix; empty allows every host
	ports []int    // CONNECT ports for hosts no rule names
	self  []int    // ports of toolguard's own listeners
	local []net.IP // this machine's addresses
}

func newEgress(allow []string, ports []int, selfAddrs []string) *egress {
	e := &egress{allow: allow, ports: ports}
	if e.ports == nil {
		e.ports = []int{443, 80}
	}
	for _, a := range selfAddrs {
		if _, p, err := net.SplitHostPort(a); err == nil {
			if n, err := strconv.Atoi(p); err == nil && n != 0 {
				e.self = append(e.self, n)
			}
		}
	}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok {
				e.local = append(e.local, ipn.IP)
			}
		}
	}
	return e
}

// isSelf reports whether hostport names one of toolguard's own listeners.
func (e *egress) isSelf(hostport string) bool {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	n, _ := strconv.Atoi(port)
	if !slices.Contains(e.self, n) {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	if ip == nil {
		return false
	}
	if ip.IsLoopback() || ip.IsUnspecified() {
		return true
	}
	return slices.ContainsFunc(e.local, ip.Equal)
}

// hostAllowed reports whether a host no rule names may be reached.
func (e *egress) hostAllowed(hostport string) bool {
	if len(e.allow) == 0 {
		return true
	}
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	host = strings.ToLower(host)
	for _, a := range e.allow {
		a = strings.ToLower(a)
		switch {
		case strings.HasPrefix(a, "*."):
			if strings.HasSuffix(host, a[1:]) {
				return true
			}
		case strings.Contains(a, ":") && !strings.HasPrefix(a, "["):
			if a == strings.ToLower(hostport) {
				return true
			}
		case a == host:
			return true
		}
	}
	return false
}

// connectAllowed reports whether a tunnel to a host no rule names may be
// opened.
func (e *egress) connectAllowed(hostport string) bool {
	_, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	n, _ := strconv.Atoi(port)
	return slices.Contains(e.ports, n) && e.hostAllowed(hostport)
}
