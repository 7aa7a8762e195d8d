package egress

import (
	"net/netip"
	"strconv"
	"strings"
)

// Address spellings: see the package comment.

// thisHostV4 is 0.0.0.0/8, "this host on this network" (RFC 1122 3.2.1.3):
// a connection to it reaches this machine, as one to :: does.
var thisHostV4 = netip.MustParsePrefix("0.0.0.0/8")

// normalizeAddr returns the address ip stands for, without a zone, IPv4
// in IPv4 form (mapped ::ffff:a.b.c.d and compatible ::a.b.c.d alike).
func normalizeAddr(ip netip.Addr) netip.Addr {
	ip = ip.WithZone("").Unmap()
	if ip.Is6() && !ip.IsUnspecified() && !ip.IsLoopback() {
		b := ip.As16()
		if isZero(b[:12]) {
			return netip.AddrFrom4([4]byte(b[12:])) // IPv4-compatible (RFC 4291 2.5.5.1, deprecated)
		}
	}
	return ip
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// isThisHost reports whether a connection to ip (normalised) reaches this
// machine whatever its interfaces: 0.0.0.0/8 and ::.
func isThisHost(ip netip.Addr) bool {
	return thisHostV4.Contains(ip) || ip == netip.IPv6Unspecified()
}

// parseHostAddr parses host as an address in any spelling the system
// resolver would accept for one: netip syntax (zones included) and the
// legacy IPv4 forms. It does not normalise.
func parseHostAddr(host string) (netip.Addr, bool) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip, true
	}
	return parseLegacyIPv4(host)
}

// parseLegacyIPv4 parses the IPv4 forms of inet_aton: one to four parts,
// each decimal, octal (leading 0) or hex (leading 0x); the last part
// fills the remaining bytes (127.1 is 127.0.0.1, 2130706433 is too).
func parseLegacyIPv4(host string) (netip.Addr, bool) {
	parts := strings.Split(host, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var vals []uint64
	for _, p := range parts {
		v, ok := parseLegacyPart(p)
		if !ok {
			return netip.Addr{}, false
		}
		vals = append(vals, v)
	}
	last := vals[len(vals)-1]
	var b [4]byte
	for i, v := range vals[:len(vals)-1] {
		if v > 0xff {
			return netip.Addr{}, false
		}
		b[i] = byte(v)
	}
	rest := 4 - (len(vals) - 1) // bytes the last part fills
	if last>>(8*rest) != 0 {
		return netip.Addr{}, false
	}
	for i := 3; i >= 4-rest; i-- {
		b[i] = byte(last)
		last >>= 8
	}
	return netip.AddrFrom4(b), true
}

// parseLegacyPart parses one part of a legacy IPv4 address.
func parseLegacyPart(p string) (uint64, bool) {
	base := 10
	switch {
	case p == "":
		return 0, false
	case len(p) > 2 && (p[:2] == "0x" || p[:2] == "0X"):
		p, base = p[2:], 16
	case len(p) > 1 && p[0] == '0':
		p, base = p[1:], 8
	}
	if p[0] == '+' || p[0] == '-' {
		return 0, false
	}
	v, err := strconv.ParseUint(p, base, 32)
	return v, err == nil
}
