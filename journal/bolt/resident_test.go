package bolt

import (
	"cmp"
	"testing"
)

func TestOverBudget(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		resident, floor, budget int64
		want                    bool
	}{
		{name: "within the budget", resident: 40 << 20, floor: 30 << 20, budget: 16 << 20, want: false},
		{name: "at the budget", resident: 30<<20 + 16<<20, floor: 30 << 20, budget: 16 << 20, want: false},
		{name: "past the budget", resident: 30<<20 + 16<<20 + 1, floor: 30 << 20, budget: 16 << 20, want: true},
		{name: "past a small budget", resident: 40 << 20, floor: 30 << 20, budget: 1 << 20, want: true},
		{name: "within the default budget", resident: 200 << 20, floor: 30 << 20, budget: DefaultResidentBudget, want: false},
		{name: "shrunk since the drop", resident: 10 << 20, floor: 30 << 20, budget: 16 << 20, want: false},
		{name: "resident unknown", resident: -1, floor: 30 << 20, budget: 16 << 20, want: true},
		{name: "floor unknown", resident: 10 << 20, floor: -1, budget: 16 << 20, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := overBudget(tc.resident, tc.floor, tc.budget); got != tc.want {
				t.Fatalf("overBudget(%d, %d, %d) = %v, want %v", tc.resident, tc.floor, tc.budget, got, tc.want)
			}
		})
	}
}

// A negative budget never drops: no drop loop runs. The default runs one.
func TestResidentBudgetStartsTheDropLoop(t *testing.T) {
	for _, tc := range []struct {
		name   string
		budget int64
		loop   bool
	}{
		{name: "default", budget: 0, loop: true},
		{name: "set", budget: 1 << 20, loop: true},
		{name: "never drop", budget: -1, loop: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := mustOpenPath(t, tempPath(t), Options{ResidentBudget: tc.budget})
			select {
			case <-j.dropStopped:
				if tc.loop {
					t.Fatal("no drop loop runs")
				}
			default:
				if !tc.loop {
					t.Fatal("a drop loop runs with a negative budget")
				}
			}
			if want := cmp.Or(tc.budget, DefaultResidentBudget); j.residentBudget != want {
				t.Fatalf("budget %d, want %d", j.residentBudget, want)
			}
		})
	}
}
