package bolt

import "testing"

func TestOverBudget(t *testing.T) {
	for _, tc := range []struct {
		name            string
		resident, floor int64
		want            bool
	}{
		{name: "within the budget", resident: 40 << 20, floor: 30 << 20, want: false},
		{name: "at the budget", resident: 30<<20 + residentBudget, floor: 30 << 20, want: false},
		{name: "past the budget", resident: 30<<20 + residentBudget + 1, floor: 30 << 20, want: true},
		{name: "shrunk since the drop", resident: 10 << 20, floor: 30 << 20, want: false},
		{name: "resident unknown", resident: -1, floor: 30 << 20, want: true},
		{name: "floor unknown", resident: 10 << 20, floor: -1, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := overBudget(tc.resident, tc.floor); got != tc.want {
				t.Fatalf("overBudget(%d, %d) = %v, want %v", tc.resident, tc.floor, got, tc.want)
			}
		})
	}
}
