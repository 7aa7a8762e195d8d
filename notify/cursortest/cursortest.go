// Package cursortest is the conformance suite of notify.Cursors: every
// implementation (the bbolt journal's file, the PostgreSQL journal's
// table) runs it, so that the notifier may rely on one compare-and-set.
package cursortest

import (
	"context"
	"sync"
	"testing"

	"github.com/toolguard/toolguard/notify"
)

// Run checks the Cursors that open returns: a fresh, empty store for
// each subtest.
func Run(t *testing.T, open func(t *testing.T) notify.Cursors) {
	t.Run("CompareAndSet", func(t *testing.T) { compareAndSet(t, open(t)) })
	t.Run("NamesApart", func(t *testing.T) { namesApart(t, open(t)) })
	t.Run("CreateAtZero", func(t *testing.T) { createAtZero(t, open(t)) })
	t.Run("OneWinner", func(t *testing.T) { oneWinner(t, open(t)) })
}

func load(t *testing.T, c notify.Cursors, name string) (uint64, bool) {
	t.Helper()
	seq, ok, err := c.Load(context.Background(), name)
	if err != nil {
		t.Fatalf("Load(%s): %v", name, err)
	}
	return seq, ok
}

func store(t *testing.T, c notify.Cursors, name string, prev, next uint64) bool {
	t.Helper()
	stored, err := c.Store(context.Background(), name, prev, next)
	if err != nil {
		t.Fatalf("Store(%s, %d, %d): %v", name, prev, next, err)
	}
	return stored
}

// compareAndSet: a Store applies only over the value it names.
func compareAndSet(t *testing.T, c notify.Cursors) {
	if seq, ok := load(t, c, "a"); ok || seq != 0 {
		t.Fatalf("Load of a new name = %d, %v; want 0, false", seq, ok)
	}
	steps := []struct {
		prev, next uint64
		stored     bool
		after      uint64
	}{
		{prev: 0, next: 5, stored: true, after: 5}, // creates
		{prev: 0, next: 7, stored: false, after: 5},
		{prev: 4, next: 7, stored: false, after: 5},
		{prev: 5, next: 5, stored: true, after: 5}, // no change
		{prev: 5, next: 9, stored: true, after: 9},
		{prev: 5, next: 11, stored: false, after: 9},
		{prev: 9, next: 1 << 62, stored: true, after: 1 << 62}, // PostgreSQL seqs are large
	}
	for i, s := range steps {
		if got := store(t, c, "a", s.prev, s.next); got != s.stored {
			t.Fatalf("step %d: Store(a, %d, %d) = %v, want %v", i, s.prev, s.next, got, s.stored)
		}
		if seq, ok := load(t, c, "a"); !ok || seq != s.after {
			t.Fatalf("step %d: Load(a) = %d, %v; want %d, true", i, seq, ok, s.after)
		}
	}
}

// namesApart: each name is its own cursor.
func namesApart(t *testing.T, c notify.Cursors) {
	store(t, c, "a", 0, 3)
	store(t, c, "b", 0, 8)
	if !store(t, c, "a", 3, 4) || store(t, c, "b", 3, 4) {
		t.Fatal("a Store over one name's value applied to the other")
	}
	a, _ := load(t, c, "a")
	b, _ := load(t, c, "b")
	if a != 4 || b != 8 {
		t.Errorf("a = %d, b = %d; want 4, 8", a, b)
	}
}

// createAtZero: a cursor created at 0 exists (a webhook configured on an
// empty journal must not later count as new).
func createAtZero(t *testing.T, c notify.Cursors) {
	if !store(t, c, "z", 0, 0) {
		t.Fatal("Store(z, 0, 0) on a new name was not stored")
	}
	if seq, ok := load(t, c, "z"); !ok || seq != 0 {
		t.Fatalf("Load(z) = %d, %v; want 0, true", seq, ok)
	}
	if !store(t, c, "z", 0, 2) {
		t.Fatal("Store(z, 0, 2) over 0 was not stored")
	}
}

// oneWinner: of concurrent Stores over the same value, one applies.
func oneWinner(t *testing.T, c notify.Cursors) {
	store(t, c, "w", 0, 10)
	const n = 8
	var wg sync.WaitGroup
	won := make(chan uint64, n)
	for i := range n {
		wg.Go(func() {
			stored, err := c.Store(context.Background(), "w", 10, 11+uint64(i))
			if err != nil {
				t.Errorf("Store: %v", err)
			}
			if stored {
				won <- 11 + uint64(i)
			}
		})
	}
	wg.Wait()
	close(won)
	var winners []uint64
	for w := range won {
		winners = append(winners, w)
	}
	if len(winners) != 1 {
		t.Fatalf("%d Stores over the same value applied, want 1", len(winners))
	}
	if seq, _ := load(t, c, "w"); seq != winners[0] {
		t.Errorf("Load(w) = %d, want the winner's %d", seq, winners[0])
	}
}
