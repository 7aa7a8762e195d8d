package config

import (
	"fmt"
	"log/slog"
	"math"
	"net/netip"
	"strconv"
	"strings"
)

// ByteSize is a number of bytes. It parses from a plain number of bytes
// ("1048576"), a decimal unit ("1GB", "512kB": powers of 1000) or a binary
// unit ("8MiB", "512KiB": powers of 1024); units are case-insensitive, a
// fraction is allowed when it comes to a whole number of bytes ("1.5KiB"),
// and a space may separate number and unit. The zero value is zero bytes.
type ByteSize int64

// Size units.
const (
	KB  ByteSize = 1000
	MB  ByteSize = 1000 * KB
	GB  ByteSize = 1000 * MB
	TB  ByteSize = 1000 * GB
	KiB ByteSize = 1 << 10
	MiB ByteSize = 1 << 20
	GiB ByteSize = 1 << 30
	TiB ByteSize = 1 << 40
)

// units in the order String tries them: largest first, binary before
// decimal at the same magnitude.
var units = []struct {
	name string
	size ByteSize
}{
	{"TiB", TiB}, {"TB", TB}, {"GiB", GiB}, {"GB", GB},
	{"MiB", MiB}, {"MB", MB}, {"KiB", KiB}, {"KB", KB}, {"B", 1},
}

// ParseByteSize parses s as described at ByteSize.
func ParseByteSize(s string) (ByteSize, error) {
	bad := func(why string) (ByteSize, error) {
		return 0, fmt.Errorf("invalid size %q (%s)", s, why)
	}
	num := strings.TrimSpace(s)
	i := strings.IndexFunc(num, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		i = len(num)
	}
	num, unit := num[:i], strings.TrimSpace(num[i:])
	mult := ByteSize(1)
	if unit != "" {
		mult = 0
		for _, u := range units {
			if strings.EqualFold(unit, u.name) {
				mult = u.size
			}
		}
	}
	if mult == 0 || num == "" {
		return bad("want e.g. 8MiB, 512KiB, 1GB or 1048576")
	}
	whole, frac, _ := strings.Cut(num, ".")
	if whole == "" && frac == "" || strings.Contains(frac, ".") || len(frac) > 12 {
		return bad("want e.g. 8MiB, 512KiB, 1GB or 1048576")
	}
	n := int64(0)
	if whole != "" {
		var err error
		if n, err = strconv.ParseInt(whole, 10, 64); err != nil {
			return bad("too large")
		}
	}
	if n > math.MaxInt64/int64(mult) {
		return bad("too large")
	}
	size := ByteSize(n) * mult
	if frac == "" {
		return size, nil
	}
	// extra = f*mult/scale must be whole; reduce by the gcd first so that
	// nothing overflows (f*mult could: f < 10^12, mult <= 2^40).
	f, _ := strconv.ParseInt(frac, 10, 64)
	m, scale := int64(mult), int64(math.Pow10(len(frac)))
	g := gcd(m, scale)
	if f%(scale/g) != 0 {
		return bad("not a whole number of bytes")
	}
	extra := ByteSize(f / (scale / g) * (m / g)) // < mult
	if size > math.MaxInt64-extra {
		return bad("too large")
	}
	return size + extra, nil
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// String prints b in the largest unit that divides it exactly: "8MiB",
// "1GB", "1000B"; zero prints as "0".
func (b ByteSize) String() string {
	if b == 0 {
		return "0"
	}
	sign, n := "", b
	if n < 0 {
		if n == math.MinInt64 {
			return strconv.FormatInt(int64(n), 10) + "B"
		}
		sign, n = "-", -n
	}
	for _, u := range units {
		if n%u.size == 0 {
			return sign + strconv.FormatInt(int64(n/u.size), 10) + u.name
		}
	}
	panic("unreachable")
}

// MarshalText implements encoding.TextMarshaler.
func (b ByteSize) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler. YAML values and
// environment variables are both parsed by it.
func (b *ByteSize) UnmarshalText(text []byte) error {
	v, err := ParseByteSize(string(text))
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// enum is the text form of a closed set of values numbered from 0.
type enum struct {
	what  string   // "policy", "format": the word error messages use
	names []string // index = value
}

func (e enum) String(typ string, i int) string {
	if i < 0 || i >= len(e.names) {
		return fmt.Sprintf("%s(%d)", typ, i)
	}
	return e.names[i]
}

func (e enum) parse(s string) (int, error) {
	for i, name := range e.names {
		if strings.EqualFold(s, name) {
			return i, nil
		}
	}
	return 0, fmt.Errorf("unknown %s %q (want %s)", e.what, s, e.want())
}

// want lists the names as "a, b or c".
func (e enum) want() string {
	n := len(e.names)
	if n == 1 {
		return e.names[0]
	}
	return strings.Join(e.names[:n-1], ", ") + " or " + e.names[n-1]
}

func (e enum) valid(i int) bool { return i >= 0 && i < len(e.names) }

// LogFormat selects the log handler. The zero value is FormatAuto.
type LogFormat int

// Log formats.
const (
	FormatAuto LogFormat = iota // tint on a terminal, JSON otherwise
	FormatJSON                  // slog.JSONHandler
	FormatText                  // slog.TextHandler (logfmt)
	FormatTint                  // tint, coloured, even when not on a terminal
)

var formatEnum = enum{"format", []string{"auto", "json", "text", "tint"}}

// ParseLogFormat parses "auto", "json", "text" or "tint".
func ParseLogFormat(s string) (LogFormat, error) {
	i, err := formatEnum.parse(s)
	return LogFormat(i), err
}

func (f LogFormat) String() string { return formatEnum.String("LogFormat", int(f)) }

// MarshalText implements encoding.TextMarshaler.
func (f LogFormat) MarshalText() ([]byte, error) { return []byte(f.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseLogFormat.
func (f *LogFormat) UnmarshalText(text []byte) error {
	v, err := ParseLogFormat(string(text))
	if err == nil {
		*f = v
	}
	return err
}

// LogLevel is the least severe level logged. Its values are slog's, so the
// zero value is LevelInfo and Level converts without a table.
type LogLevel int

// Log levels.
const (
	LevelDebug = LogLevel(slog.LevelDebug)
	LevelInfo  = LogLevel(slog.LevelInfo)
	LevelWarn  = LogLevel(slog.LevelWarn)
	LevelError = LogLevel(slog.LevelError)
)

var levelNames = []struct {
	name  string
	level LogLevel
}{{"debug", LevelDebug}, {"info", LevelInfo}, {"warn", LevelWarn}, {"error", LevelError}}

// levelEnum only words messages: LogLevel values are not 0, 1, 2, 3.
var levelEnum = enum{"level", []string{"debug", "info", "warn", "error"}}

// ParseLogLevel parses "debug", "info", "warn" or "error".
func ParseLogLevel(s string) (LogLevel, error) {
	for _, n := range levelNames {
		if strings.EqualFold(s, n.name) {
			return n.level, nil
		}
	}
	return 0, fmt.Errorf("unknown level %q (want %s)", s, levelEnum.want())
}

func (l LogLevel) String() string {
	for _, n := range levelNames {
		if n.level == l {
			return n.name
		}
	}
	return fmt.Sprintf("LogLevel(%d)", int(l))
}

func (l LogLevel) valid() bool {
	for _, n := range levelNames {
		if n.level == l {
			return true
		}
	}
	return false
}

// Level implements slog.Leveler, so a LogLevel can be put straight into
// slog.HandlerOptions.
func (l LogLevel) Level() slog.Level { return slog.Level(l) }

// MarshalText implements encoding.TextMarshaler.
func (l LogLevel) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseLogLevel.
func (l *LogLevel) UnmarshalText(text []byte) error {
	v, err := ParseLogLevel(string(text))
	if err == nil {
		*l = v
	}
	return err
}

// List is a setting that holds several values, e.g. hosts or ports. In YAML
// it is a sequence of scalars (`[a, b]` or a block list) or one
// comma-separated scalar ("a, b"); in the environment a comma-separated
// string. Entries are trimmed of spaces and empty ones dropped, so "a,,b"
// holds a and b. An empty List is nil; what it means is up to the setting.
type List []string

// String joins the entries with ", ", which UnmarshalText reads back.
func (l List) String() string { return strings.Join(l, ", ") }

// UnmarshalText implements encoding.TextUnmarshaler: it splits text on
// commas, trims spaces and drops empty entries. It never fails; Validate
// checks the entries.
func (l *List) UnmarshalText(text []byte) error {
	var out List
	for _, part := range strings.Split(string(text), ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	*l = out
	return nil
}

// Ports parses the entries as port numbers, as in Upstream.ConnectPorts.
// Call it after Validate: an entry that is no port number from 1 to 65535
// is skipped.
func (l List) Ports() []int {
	var ports []int
	for _, s := range l {
		if validPort(s) {
			n, _ := strconv.Atoi(s)
			ports = append(ports, n)
		}
	}
	return ports
}

// Prefixes parses the entries as CIDRs, as in Egress.Deny; a single
// address counts as a prefix of its full length. Call it after Validate: an
// entry that is neither is skipped.
func (l List) Prefixes() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range l {
		if p, err := parsePrefix(s); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// parsePrefix parses a CIDR ("10.0.0.0/8", "fd00::/8") or a single address.
func parsePrefix(s string) (netip.Prefix, error) {
	if ip, err := netip.ParseAddr(s); err == nil {
		return netip.PrefixFrom(ip, ip.BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	return p.Masked(), nil
}

// StartCheck says when toolguard serve runs a full consistency check of the
// journal before it serves. The zero value is CheckAuto.
type StartCheck int

// Start check modes.
const (
	CheckAuto   StartCheck = iota // only when the file is at most AutoCheckMaxSize
	CheckAlways                   // whatever the size
	CheckNever                    // never; `toolguard journal check` does it offline
)

// AutoCheckMaxSize is the largest journal file CheckAuto checks on start;
// one this size checks in about a second.
const AutoCheckMaxSize = 64 * MiB

var startCheckEnum = enum{"mode", []string{"auto", "always", "never"}}

// ParseStartCheck parses "auto", "always" or "never".
func ParseStartCheck(s string) (StartCheck, error) {
	i, err := startCheckEnum.parse(s)
	return StartCheck(i), err
}

func (s StartCheck) String() string { return startCheckEnum.String("StartCheck", int(s)) }

// ShouldCheck reports whether a journal file of size bytes is to be checked
// on start.
func (s StartCheck) ShouldCheck(size int64) bool {
	switch s {
	case CheckAlways:
		return true
	case CheckNever:
		return false
	}
	return size <= int64(AutoCheckMaxSize)
}

// MarshalText implements encoding.TextMarshaler.
func (s StartCheck) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseStartCheck.
func (s *StartCheck) UnmarshalText(text []byte) error {
	v, err := ParseStartCheck(string(text))
	if err == nil {
		*s = v
	}
	return err
}

// JournalBackend selects where the journal lives. The zero value is
// BackendBolt.
type JournalBackend int

// Journal backends.
const (
	BackendBolt     JournalBackend = iota // a bbolt file owned by one process
	BackendPostgres                       // a PostgreSQL database shared by replicas
)

var backendEnum = enum{"backend", []string{"bolt", "postgres"}}

// ParseJournalBackend parses "bolt" or "postgres".
func ParseJournalBackend(s string) (JournalBackend, error) {
	i, err := backendEnum.parse(s)
	return JournalBackend(i), err
}

func (b JournalBackend) String() string { return backendEnum.String("JournalBackend", int(b)) }

// MarshalText implements encoding.TextMarshaler.
func (b JournalBackend) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseJournalBackend.
func (b *JournalBackend) UnmarshalText(text []byte) error {
	v, err := ParseJournalBackend(string(text))
	if err == nil {
		*b = v
	}
	return err
}
