package policy

import "testing"

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		parse   func(string) (string, bool, error)
		in      string
		want    string
		wantErr string
	}{
		{name: "unmatched guard", parse: unmatched, in: "guard", want: "guard"},
		{name: "unmatched any case", parse: unmatched, in: "Reject", want: "reject"},
		{name: "unmatched bad", parse: unmatched, in: "maybe", wantErr: `unknown policy "maybe" (want passthrough, guard or reject)`},
		{name: "version allow", parse: version, in: "ALLOW", want: "allow"},
		{name: "version bad", parse: version, in: "ignore", wantErr: `unknown policy "ignore" (want stop or allow)`},
		{name: "mode observe", parse: mode, in: "Observe", want: "observe"},
		{name: "mode enforce", parse: mode, in: "enforce", want: "enforce"},
		{name: "mode bad", parse: mode, in: "watch", wantErr: `unknown mode "watch" (want enforce or observe)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, valid, err := tc.parse(tc.in)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want || !valid {
				t.Errorf("got %q (valid %v), %v; want %q", got, valid, err, tc.want)
			}
		})
	}
}

func unmatched(s string) (string, bool, error) {
	var u Unmatched
	err := u.UnmarshalText([]byte(s))
	text, _ := u.MarshalText()
	return string(text), u.Valid(), err
}

func version(s string) (string, bool, error) {
	var v VersionChange
	err := v.UnmarshalText([]byte(s))
	text, _ := v.MarshalText()
	return string(text), v.Valid(), err
}

func mode(s string) (string, bool, error) {
	var m Mode
	err := m.UnmarshalText([]byte(s))
	text, _ := m.MarshalText()
	return string(text), m.Valid(), err
}

func TestZeroValuesAndOutOfRange(t *testing.T) {
	var u Unmatched
	var v VersionChange
	if u != UnmatchedPassthrough || v != VersionStop {
		t.Errorf("zero values %v, %v; want passthrough, stop", u, v)
	}
	var m Mode
	if m != ModeEnforce || Mode(2).Valid() || Mode(2).String() != "Mode(2)" {
		t.Errorf("Mode: zero value %v, out of range %v; want enforce, Mode(2)", m, Mode(2))
	}
	if Unmatched(7).Valid() || Unmatched(7).String() != "Unmatched(7)" || VersionChange(-1).String() != "VersionChange(-1)" {
		t.Errorf("out-of-range values: %v %v", Unmatched(7), VersionChange(-1))
	}
}
