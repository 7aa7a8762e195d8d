package main

import (
	"testing"

	"github.com/toolguard/toolguard/config"
	"github.com/toolguard/toolguard/journal/bolt"
)

// journal.resident_budget 0 means never drop, which bolt.Options spells
// negative; any other size passes through.
func TestResidentBudget(t *testing.T) {
	for _, tc := range []struct {
		in   config.ByteSize
		want int64
	}{
		{in: 0, want: -1},
		{in: 16 * config.MiB, want: 16 << 20},
		{in: config.Default().Journal.ResidentBudget, want: bolt.DefaultResidentBudget},
	} {
		if got := residentBudget(tc.in); got != tc.want {
			t.Errorf("residentBudget(%v) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// The startup line counts the held steps of a stopped journal.
func TestStartupCounts(t *testing.T) {
	j, err := bolt.Open(stoppedJournal(t, "k1", "k2"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if ambiguous, verifying, held := startupCounts(j); ambiguous != 0 || verifying != 0 || held != 2 {
		t.Errorf("startupCounts = %d ambiguous, %d verifying, %d held; want 0, 0, 2", ambiguous, verifying, held)
	}
}
