package egress

import (
	"errors"
	"fmt"
	"net/netip"
)

// Refusals of Check and Dial. Every refusal is an *Error; errors.Is
// matches it with ErrRefused and with the sentinel saying why.
var (
	// ErrRefused is matched by every refusal: nothing was dialled.
	ErrRefused = errors.New("refused by the egress policy")

	// ErrSelf: the target is one of toolguard's own listeners.
	ErrSelf = errors.New("toolguard does not proxy requests to its own listeners")
	// ErrDenied: the address is inside the deny list.
	ErrDenied = errors.New("the address is in egress.deny")
	// ErrZone: an IPv6 address with a zone, which no other rule refused.
	ErrZone = errors.New("toolguard does not connect to addresses with an IPv6 zone")
	// ErrHostNotAllowed: a request to a host that no rule names and the
	// allowlist does not hold.
	ErrHostNotAllowed = errors.New("not named in rules, and not on upstream.allow_hosts")
	// ErrTunnelNotAllowed: a tunnel to a host that no rule names, on a port
	// that is not a CONNECT port or to a host the allowlist does not hold.
	ErrTunnelNotAllowed = errors.New("not named in rules, and not an allowed host and port")
)

// Error is a connection the policy refused.
type Error struct {
	// Host is the target as the caller named it: its host when Addr is
	// set, host:port when the target was refused by its name.
	Host string
	// Addr is the normalised address refused; the zero AddrPort when the
	// target was refused by its name.
	Addr netip.AddrPort
	// Err is the sentinel saying why.
	Err error
	// detail completes Err: the deny entry, the zone.
	detail string
}

func (e *Error) Error() string {
	why := e.Err.Error()
	if e.detail != "" {
		why += " (" + e.detail + ")"
	}
	switch {
	case e.Addr.IsValid() && e.Host == e.Addr.Addr().String():
		return fmt.Sprintf("refused to connect to %s: %s", e.Addr, why)
	case e.Addr.IsValid():
		return fmt.Sprintf("refused to connect to %s (%s): %s", e.Host, e.Addr, why)
	case e.Err == ErrHostNotAllowed:
		return fmt.Sprintf("toolguard does not proxy requests to %s: %s", e.Host, why)
	case e.Err == ErrTunnelNotAllowed:
		return fmt.Sprintf("toolguard does not tunnel to %s (%s)", e.Host, why)
	}
	return why
}

// Unwrap returns the sentinel saying why.
func (e *Error) Unwrap() error { return e.Err }

// Is makes every refusal match ErrRefused.
func (e *Error) Is(target error) bool { return target == ErrRefused }
