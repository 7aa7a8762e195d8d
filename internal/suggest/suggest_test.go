package suggest

import "testing"

func TestDistance(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		want int
	}{
		{name: "equal", a: "listen", b: "listen", want: 0},
		{name: "empty", a: "", b: "abc", want: 3},
		{name: "one substitution", a: "lisfen", b: "listen", want: 1},
		{name: "one deletion", a: "lisen", b: "listen", want: 1},
		{name: "transposition is two", a: "lsiten", b: "listen", want: 2},
		{name: "kitten", a: "kitten", b: "sitting", want: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Distance(tc.a, tc.b); got != tc.want {
				t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
			}
			if got := Distance(tc.b, tc.a); got != tc.want {
				t.Errorf("Distance(%q, %q) = %d, want %d (symmetric)", tc.b, tc.a, got, tc.want)
			}
		})
	}
}

func TestHint(t *testing.T) {
	known := []string{"fields", "ignore", "scope", "optional"}
	tests := []struct {
		name string
		got  string
		want string
	}{
		{name: "one edit", got: "feilds", want: ` (did you mean "fields"?)`},
		{name: "two edits", got: "scoep", want: ` (did you mean "scope"?)`},
		{name: "three edits is too far", got: "fxxxds", want: ""},
		{name: "short word matches nothing", got: "sc", want: ""},
		{name: "unrelated", got: "timeout", want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Hint(tc.got, known); got != tc.want {
				t.Errorf("Hint(%q) = %q, want %q", tc.got, got, tc.want)
			}
		})
	}
}
