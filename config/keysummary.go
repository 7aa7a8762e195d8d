package config

// KeySummary says whether new steps keep a summary of their key fields
// (journal.Step.KeyFields) for operators. The zero value is KeySummaryOn.
type KeySummary int

// Key summary modes.
const (
	KeySummaryOn  KeySummary = iota // short values, the route's redact paths masked
	KeySummaryOff                   // hashes only: operators approve by body hash
)

var keySummaryEnum = enum{"mode", []string{"on", "off"}}

// ParseKeySummary parses "on" or "off".
func ParseKeySummary(s string) (KeySummary, error) {
	i, err := keySummaryEnum.parse(s)
	return KeySummary(i), err
}

func (k KeySummary) String() string { return keySummaryEnum.String("KeySummary", int(k)) }

// MarshalText implements encoding.TextMarshaler.
func (k KeySummary) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseKeySummary.
func (k *KeySummary) UnmarshalText(text []byte) error {
	v, err := ParseKeySummary(string(text))
	if err == nil {
		*k = v
	}
	return err
}
