//go:build linux

package main

import (
	"slices"
	"strings"
	"testing"
)

func TestMedianRound(t *testing.T) {
	tests := []struct {
		name      string
		rounds    []cell
		wantRPS   float64
		wantP50   float64
		wantErrs  int
		wantFirst string
		wantList  []float64
	}{
		{name: "one round is kept as it is", rounds: []cell{{RPS: 10, P50MS: 1, Errors: 2, FirstError: "x"}},
			wantRPS: 10, wantP50: 1, wantErrs: 2, wantFirst: "x"},
		{name: "three rounds: the middle one, with its own latencies",
			rounds:  []cell{{RPS: 30, P50MS: 3}, {RPS: 10, P50MS: 1, Errors: 1, FirstError: "reset"}, {RPS: 20, P50MS: 2}},
			wantRPS: 20, wantP50: 2, wantErrs: 1, wantFirst: "reset", wantList: []float64{30, 10, 20}},
		{name: "an even number: the higher of the middle two",
			rounds:  []cell{{RPS: 4}, {RPS: 1}, {RPS: 3}, {RPS: 2}},
			wantRPS: 3, wantList: []float64{4, 1, 3, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := medianRound(tt.rounds)
			if c.RPS != tt.wantRPS || c.P50MS != tt.wantP50 || c.Errors != tt.wantErrs || c.FirstError != tt.wantFirst || !slices.Equal(c.RoundsRPS, tt.wantList) {
				t.Errorf("medianRound = RPS %v p50 %v errors %d first %q rounds %v; want %v %v %d %q %v",
					c.RPS, c.P50MS, c.Errors, c.FirstError, c.RoundsRPS, tt.wantRPS, tt.wantP50, tt.wantErrs, tt.wantFirst, tt.wantList)
			}
		})
	}
}

func TestRoundsFlag(t *testing.T) {
	if o, err := parseFlags([]string{"-rounds", "3"}); err != nil || o.rounds != 3 {
		t.Errorf("-rounds 3: %d, %v", o.rounds, err)
	}
	if o, err := parseFlags(nil); err != nil || o.rounds != 1 {
		t.Errorf("default rounds: %d, %v; want 1", o.rounds, err)
	}
	if _, err := parseFlags([]string{"-rounds", "0"}); err == nil || !strings.Contains(err.Error(), "-rounds") {
		t.Errorf("-rounds 0: error %v, want one naming -rounds", err)
	}
}

func TestCellsShowEveryRound(t *testing.T) {
	r := &report{Rounds: 3, Concurrencies: []int{64},
		Cells: []cell{{Scenario: scGuarded, Conc: 64, RPS: 20, RoundsRPS: []float64{30, 10, 20}}}}
	var b strings.Builder
	r.writeCells(&b, 0)
	if !strings.Contains(b.String(), "| guarded | 64 | 20 (30, 10, 20) |") {
		t.Errorf("the guarded row does not list every round's req/s:\n%s", b.String())
	}
}
