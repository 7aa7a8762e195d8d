package rules

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// hostKey is a host name (lowercase, IPv6 without brackets, no trailing
// dot) and a port ("" in a rule: any port).
type hostKey struct {
	host, port string
}

func (k hostKey) String() string {
	h := k.host
	if strings.IndexByte(h, ':') >= 0 {
		h = "[" + h + "]"
	}
	if k.port != "" {
		return h + ":" + k.port
	}
	return h
}

// parseRuleHost validates a hosts entry: host, host:port, [v6]:port, or
// *.domain with an optional port.
func parseRuleHost(s string) (k hostKey, wildcard bool, err error) {
	if strings.Contains(s, "://") || strings.ContainsAny(s, "/?#@ ") {
		return k, false, errors.New("want a host or host:port, not a URL")
	}
	k = splitHost(s)
	if k.host == "" {
		return k, false, errors.New("empty host")
	}
	if k.port != "" {
		if n, err := strconv.Atoi(k.port); err != nil || n < 1 || n > 65535 {
			return k, false, fmt.Errorf("invalid port %q", k.port)
		}
	}
	if rest, ok := strings.CutPrefix(k.host, "*."); ok {
		k.host, wildcard = rest, true
	}
	if _, err := netip.ParseAddr(k.host); err == nil {
		if wildcard {
			return k, false, errors.New("a wildcard cannot precede an IP address")
		}
		return k, false, nil
	}
	if strings.IndexByte(k.host, ':') >= 0 {
		return k, false, errors.New("invalid IPv6 address (want [address]:port)")
	}
	return k, wildcard, validDomain(k.host)
}

func validDomain(h string) error {
	for _, label := range strings.Split(h, ".") {
		if label == "" {
			return errors.New("empty label")
		}
		for i := 0; i < len(label); i++ {
			b := label[i]
			if !(b >= 'a' && b <= 'z') && !(b >= '0' && b <= '9') && b != '-' && b != '_' {
				if b == '*' {
					return errors.New("'*' is only allowed as the whole first label")
				}
				return fmt.Errorf("invalid character %q", b)
			}
		}
	}
	return nil
}

// splitHost normalises a request's host or host:port. It allocates only
// when the host has upper-case letters.
func splitHost(hostport string) hostKey {
	var k hostKey
	switch {
	case strings.HasPrefix(hostport, "["):
		end := strings.IndexByte(hostport, ']')
		if end < 0 {
			return hostKey{host: hostport}
		}
		k.host = hostport[1:end]
		k.port, _ = strings.CutPrefix(hostport[end+1:], ":")
	case strings.Count(hostport, ":") == 1:
		k.host, k.port, _ = strings.Cut(hostport, ":")
	default:
		k.host = hostport
	}
	k.host = strings.TrimSuffix(k.host, ".")
	for i := 0; i < len(k.host); i++ {
		if b := k.host[i]; b >= 'A' && b <= 'Z' {
			k.host = strings.ToLower(k.host)
			break
		}
	}
	return k
}
