package config

import (
	"math"
	"testing"
)

func TestParseByteSize(t *testing.T) {
	tests := []struct {
		in      string
		want    ByteSize
		wantErr string
	}{
		{in: "0", want: 0},
		{in: "1048576", want: MiB},
		{in: "8MiB", want: 8 * MiB},
		{in: "512KiB", want: 512 * KiB},
		{in: "1GB", want: GB},
		{in: "1GiB", want: GiB},
		{in: "2TiB", want: 2 * TiB},
		{in: "3TB", want: 3 * TB},
		{in: "100B", want: 100},
		{in: "8mib", want: 8 * MiB},
		{in: "500kB", want: 500 * KB},
		{in: "8 MiB", want: 8 * MiB},
		{in: " 8MiB ", want: 8 * MiB},
		{in: "1.5KiB", want: 1536},
		{in: "0.5MB", want: 500 * KB},
		{in: ".25MiB", want: 256 * KiB},
		{in: "1.0", want: 1},
		{in: "0.000001TB", want: MB},
		{in: "9223372036854775807", want: math.MaxInt64},
		{in: "", wantErr: `invalid size "" (want e.g. 8MiB, 512KiB, 1GB or 1048576)`},
		{in: "MiB", wantErr: `invalid size "MiB" (want e.g. 8MiB, 512KiB, 1GB or 1048576)`},
		{in: "8M", wantErr: `invalid size "8M" (want e.g. 8MiB, 512KiB, 1GB or 1048576)`},
		{in: "-1", wantErr: `invalid size "-1" (want e.g. 8MiB, 512KiB, 1GB or 1048576)`},
		{in: "1.2.3", wantErr: `invalid size "1.2.3" (want e.g. 8MiB, 512KiB, 1GB or 1048576)`},
		{in: ".", wantErr: `invalid size "." (want e.g. 8MiB, 512KiB, 1GB or 1048576)`},
		{in: "1.5", wantErr: `invalid size "1.5" (not a whole number of bytes)`},
		{in: "0.3KiB", wantErr: `invalid size "0.3KiB" (not a whole number of bytes)`},
		{in: "9223372036854775808", wantErr: `invalid size "9223372036854775808" (too large)`},
		{in: "8388608TiB", wantErr: `invalid size "8388608TiB" (too large)`},
		{in: "8388607.9999999TiB", wantErr: `invalid size "8388607.9999999TiB" (not a whole number of bytes)`},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseByteSize(tc.in)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("ParseByteSize(%q) = %d, %v; want error %q", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseByteSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestByteSizeString(t *testing.T) {
	tests := []struct {
		in   ByteSize
		want string
	}{
		{in: 0, want: "0"},
		{in: 1, want: "1B"},
		{in: 1000, want: "1KB"},
		{in: 1023, want: "1023B"},
		{in: KiB, want: "1KiB"},
		{in: 1536, want: "1536B"}, // 1.5KiB: no whole unit
		{in: 8 * MiB, want: "8MiB"},
		{in: MiB, want: "1MiB"},
		{in: GB, want: "1GB"},
		{in: 1024 * KB, want: "1000KiB"},
		{in: 3 * TiB, want: "3TiB"},
		{in: -2 * MiB, want: "-2MiB"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			if got := tc.in.String(); got != tc.want {
				t.Errorf("ByteSize(%d).String() = %q, want %q", int64(tc.in), got, tc.want)
			}
			if tc.in < 0 {
				return
			}
			back, err := ParseByteSize(tc.in.String())
			if err != nil || back != tc.in {
				t.Errorf("ParseByteSize(%q) = %d, %v; want %d", tc.in.String(), back, err, tc.in)
			}
		})
	}
}

func TestEnums(t *testing.T) {
	tests := []struct {
		name    string
		parse   func(string) (textEnum, error)
		in      string
		want    string
		wantErr string
	}{
		{name: "unmatched guard", parse: wrap(ParseUnmatched), in: "guard", want: "guard"},
		{name: "unmatched case", parse: wrap(ParseUnmatched), in: "Reject", want: "reject"},
		{name: "unmatched bad", parse: wrap(ParseUnmatched), in: "maybe",
			wantErr: `unknown policy "maybe" (want passthrough, guard or reject)`},
		{name: "version allow", parse: wrap(ParseVersionPolicy), in: "allow", want: "allow"},
		{name: "version bad", parse: wrap(ParseVersionPolicy), in: "ignore",
			wantErr: `unknown policy "ignore" (want stop or allow)`},
		{name: "format tint", parse: wrap(ParseLogFormat), in: "tint", want: "tint"},
		{name: "format bad", parse: wrap(ParseLogFormat), in: "xml",
			wantErr: `unknown format "xml" (want auto, json, text or tint)`},
		{name: "level warn", parse: wrap(ParseLogLevel), in: "WARN", want: "warn"},
		{name: "level bad", parse: wrap(ParseLogLevel), in: "verbose",
			wantErr: `unknown level "verbose" (want debug, info, warn or error)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.parse(tc.in)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("parse(%q) error = %v, want %q", tc.in, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			text, _ := got.MarshalText()
			if got.String() != tc.want || string(text) != tc.want {
				t.Errorf("parse(%q) = %q (text %q), want %q", tc.in, got.String(), text, tc.want)
			}
		})
	}
}

type textEnum interface {
	String() string
	MarshalText() ([]byte, error)
}

func wrap[T textEnum](parse func(string) (T, error)) func(string) (textEnum, error) {
	return func(s string) (textEnum, error) { return parse(s) }
}

func TestEnumZeroValues(t *testing.T) {
	var c Config
	if c.Unmatched != UnmatchedPassthrough || c.Workflows.OnVersionChange != VersionStop ||
		c.Log.Format != FormatAuto || c.Log.Level != LevelInfo {
		t.Errorf("zero values are not the defaults: %+v", c)
	}
	if got := Unmatched(7).String(); got != "Unmatched(7)" {
		t.Errorf("Unmatched(7).String() = %q", got)
	}
	if got := LevelWarn.Level().String(); got != "WARN" {
		t.Errorf("LevelWarn.Level() = %s, want WARN", got)
	}
}
