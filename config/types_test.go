package config

import (
	"math"
	"reflect"
	"testing"

	"github.com/toolguard/toolguard/policy"
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
		{name: "unmatched guard", parse: wrap(policy.ParseUnmatched), in: "guard", want: "guard"},
		{name: "unmatched case", parse: wrap(policy.ParseUnmatched), in: "Reject", want: "reject"},
		{name: "unmatched bad", parse: wrap(policy.ParseUnmatched), in: "maybe",
			wantErr: `unknown policy "maybe" (want passthrough, guard or reject)`},
		{name: "version allow", parse: wrap(policy.ParseVersionChange), in: "allow", want: "allow"},
		{name: "version bad", parse: wrap(policy.ParseVersionChange), in: "ignore",
			wantErr: `unknown policy "ignore" (want stop or allow)`},
		{name: "format tint", parse: wrap(ParseLogFormat), in: "tint", want: "tint"},
		{name: "format bad", parse: wrap(ParseLogFormat), in: "xml",
			wantErr: `unknown format "xml" (want auto, json, text or tint)`},
		{name: "level warn", parse: wrap(ParseLogLevel), in: "WARN", want: "warn"},
		{name: "level bad", parse: wrap(ParseLogLevel), in: "verbose",
			wantErr: `unknown level "verbose" (want debug, info, warn or error)`},
		{name: "start check auto", parse: wrap(ParseStartCheck), in: "auto", want: "auto"},
		{name: "start check always", parse: wrap(ParseStartCheck), in: "ALWAYS", want: "always"},
		{name: "start check never", parse: wrap(ParseStartCheck), in: "never", want: "never"},
		{name: "start check bad", parse: wrap(ParseStartCheck), in: "sometimes",
			wantErr: `unknown mode "sometimes" (want auto, always or never)`},
		{name: "key summary off", parse: wrap(ParseKeySummary), in: "OFF", want: "off"},
		{name: "key summary bad", parse: wrap(ParseKeySummary), in: "redacted",
			wantErr: `unknown mode "redacted" (want on or off)`},
		{name: "start check empty", parse: wrap(ParseStartCheck), in: "",
			wantErr: `unknown mode "" (want auto, always or never)`},
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
	if c.Unmatched != policy.UnmatchedPassthrough || c.Workflows.OnVersionChange != policy.VersionStop ||
		c.Log.Format != FormatAuto || c.Log.Level != LevelInfo || c.Journal.CheckOnStart != CheckAuto {
		t.Errorf("zero values are not the defaults: %+v", c)
	}
	if got := policy.Unmatched(7).String(); got != "Unmatched(7)" {
		t.Errorf("Unmatched(7).String() = %q", got)
	}
	if got := StartCheck(3).String(); got != "StartCheck(3)" {
		t.Errorf("StartCheck(3).String() = %q", got)
	}
	if got := LevelWarn.Level().String(); got != "WARN" {
		t.Errorf("LevelWarn.Level() = %s, want WARN", got)
	}
}

func TestStartCheckUnmarshalText(t *testing.T) {
	s := CheckNever
	if err := s.UnmarshalText([]byte("Always")); err != nil || s != CheckAlways {
		t.Errorf("UnmarshalText(Always) = %v, %v; want always", s, err)
	}
	if err := s.UnmarshalText([]byte("x")); err == nil || s != CheckAlways {
		t.Errorf("UnmarshalText(x) = %v, %v; want an error and no change", s, err)
	}
}

func TestStartCheckShouldCheck(t *testing.T) {
	tests := []struct {
		mode StartCheck
		size int64
		want bool
	}{
		{CheckAuto, 0, true},
		{CheckAuto, int64(AutoCheckMaxSize), true},
		{CheckAuto, int64(AutoCheckMaxSize) + 1, false},
		{CheckAlways, 0, true},
		{CheckAlways, 1 << 40, true},
		{CheckNever, 0, false},
		{CheckNever, 1 << 40, false},
	}
	if AutoCheckMaxSize != 64*MiB {
		t.Errorf("AutoCheckMaxSize = %v, want 64MiB", AutoCheckMaxSize)
	}
	for _, tc := range tests {
		if got := tc.mode.ShouldCheck(tc.size); got != tc.want {
			t.Errorf("%v.ShouldCheck(%d) = %v, want %v", tc.mode, tc.size, got, tc.want)
		}
	}
}

func TestListUnmarshalText(t *testing.T) {
	tests := []struct {
		in   string
		want List
	}{
		{in: "", want: nil},
		{in: " ", want: nil},
		{in: ",, ,", want: nil},
		{in: "a", want: List{"a"}},
		{in: "a,b", want: List{"a", "b"}},
		{in: " a , b ", want: List{"a", "b"}},
		{in: "a,,b,", want: List{"a", "b"}},
		{in: "443, 80", want: List{"443", "80"}},
		{in: "*.example.com, api.example.org:8443", want: List{"*.example.com", "api.example.org:8443"}},
		{in: "a b, c", want: List{"a b", "c"}}, // inner spaces are Validate's business
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			l := List{"old"}
			if err := l.UnmarshalText([]byte(tc.in)); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(l, tc.want) {
				t.Errorf("UnmarshalText(%q) = %#v, want %#v", tc.in, l, tc.want)
			}
			var back List
			if err := back.UnmarshalText([]byte(l.String())); err != nil || !reflect.DeepEqual(back, l) {
				t.Errorf("UnmarshalText(%q) = %#v, %v; want %#v", l.String(), back, err, l)
			}
		})
	}
}

func TestListString(t *testing.T) {
	tests := []struct {
		in   List
		want string
	}{
		{in: nil, want: ""},
		{in: List{"a"}, want: "a"},
		{in: List{"443", "80"}, want: "443, 80"},
	}
	for _, tc := range tests {
		if got := tc.in.String(); got != tc.want {
			t.Errorf("%#v.String() = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestListPorts(t *testing.T) {
	tests := []struct {
		in   List
		want []int
	}{
		{in: nil, want: nil},
		{in: List{"443", "80"}, want: []int{443, 80}},
		{in: List{"1", "65535"}, want: []int{1, 65535}},
		{in: List{"0", "https", "65536", "-1", "0443", "8443"}, want: []int{8443}}, // invalid ones skipped
	}
	for _, tc := range tests {
		if got := tc.in.Ports(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%#v.Ports() = %v, want %v", tc.in, got, tc.want)
		}
	}
	if got := Default().Upstream.ConnectPorts.Ports(); !reflect.DeepEqual(got, []int{443, 80}) {
		t.Errorf("default connect_ports = %v, want [443 80]", got)
	}
}
