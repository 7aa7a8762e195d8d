// Package egress is toolguard's egress policy: which targets the proxy may
// reach (hosts, CONNECT ports, never its own listeners nor the denied
// ranges), decided by one Check on every spelling of an address. Its Dial
// resolves a name once, checks every address, and connects only to a
// checked one, so no name, zone or rebinding reaches what an address would
// not.
//
// # The policy
//
// Hosts that rules name are always reachable. Other hosts are reachable
// when the allowlist is empty or names them, and a tunnel to one opens only
// to the CONNECT ports. Whatever the name, the address connected to is
// never one of toolguard's own listeners (an unspecified listener address
// stands for every address of this machine), nor inside the deny list
// (DefaultDeny unless configured).
//
// # Two moments, one policy
//
// Check answers for a target as a client named it, before any work is
// done: the host and port rules, and the address rules when the host is an
// address in any spelling. It does no lookup. Dial enforces the address
// rules on what is actually dialled: a name is resolved once, every address
// it resolves to is checked, and only checked addresses are dialled, by
// address, so there is no second lookup to rebind. A name with any refused
// address is refused as a whole. Every refusal is an *Error wrapping
// ErrRefused and one of the sentinels of errors.go.
//
// # Spellings
//
// One address has many spellings: an IPv6 zone (::1%lo), an IPv4-mapped
// (::ffff:127.0.0.1) or IPv4-compatible (::127.0.0.1) IPv6 address, and
// the legacy IPv4 forms that inet_aton accepts and glibc's getaddrinfo
// resolves (2130706433, 0x7f.1, 017700000001, 127.1). netip.Prefix.Contains
// is false for every zoned address, so an unnormalised check is bypassed by
// a zone. Every address is normalised before it is checked, and the
// normalised address is the one dialled; a zoned address that passes is
// refused all the same, since a zone picks an interface.
package egress
