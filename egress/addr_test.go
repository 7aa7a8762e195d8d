package egress

import (
	"net/netip"
	"testing"
)

func TestNormalizeAddr(t *testing.T) {
	tests := []struct{ in, want string }{
		{in: "::1%lo", want: "::1"},
		{in: "::%eth0", want: "::"},
		{in: "::ffff:127.0.0.1", want: "127.0.0.1"},
		{in: "::127.0.0.1", want: "127.0.0.1"},
		{in: "::ffff:0.0.0.0", want: "0.0.0.0"},
		{in: "fd00:ec2::254%lo", want: "fd00:ec2::254"},
		{in: "2001:db8::1", want: "2001:db8::1"},
		{in: "10.0.0.1", want: "10.0.0.1"},
	}
	for _, tc := range tests {
		if got := normalizeAddr(netip.MustParseAddr(tc.in)).String(); got != tc.want {
			t.Errorf("normalizeAddr(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// parseHostAddr reads the spellings glibc's getaddrinfo (Go's cgo
// resolver) resolves as IPv4 addresses, so that what a name means does
// not depend on the resolver Go picked.
func TestParseHostAddr(t *testing.T) {
	tests := []struct {
		in   string
		want string // "" = not an address
	}{
		{in: "127.0.0.1", want: "127.0.0.1"},
		{in: "2130706433", want: "127.0.0.1"},
		{in: "0x7f.1", want: "127.0.0.1"},
		{in: "0X7F.0.0.1", want: "127.0.0.1"},
		{in: "017700000001", want: "127.0.0.1"},
		{in: "0177.0.0.1", want: "127.0.0.1"},
		{in: "127.1", want: "127.0.0.1"},
		{in: "127.0.1", want: "127.0.0.1"},
		{in: "0", want: "0.0.0.0"},
		{in: "169.254.43522", want: "169.254.170.2"},
		{in: "::1%lo", want: "::1%lo"},
		{in: "4294967296", want: ""}, // over 32 bits
		{in: "256.0.0.1", want: ""},
		{in: "1.2.3.4.5", want: ""},
		{in: "08.0.0.1", want: ""}, // 8 is not octal
		{in: "0x", want: ""},
		{in: "1..2", want: ""},
		{in: "+1", want: ""},
		{in: "example.com", want: ""},
		{in: "cafe", want: ""},
		{in: "", want: ""},
	}
	for _, tc := range tests {
		ip, ok := parseHostAddr(tc.in)
		got := ""
		if ok {
			got = ip.String()
		}
		if got != tc.want {
			t.Errorf("parseHostAddr(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
