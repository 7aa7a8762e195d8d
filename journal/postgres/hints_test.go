package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
)

// A hint another replica has made stale costs a round trip, never a wrong
// write: each case leaves replica a with a hint of "k", changes "k"
// through replica b (or the database), and checks that a's Apply decides
// on the step as it is.
func TestStaleHints(t *testing.T) {
	for _, tc := range []struct {
		name string
		// hint leaves a hint of k in a, and returns a's claim (zero if none).
		hint func(t *testing.T, a *Journal) journal.Step
		// change makes the hint stale through b.
		change func(t *testing.T, a, b *Journal)
		// check applies through a and checks the result.
		check func(t *testing.T, a *Journal, mine journal.Step)
	}{{
		name: "absent, then claimed elsewhere",
		hint: func(t *testing.T, a *Journal) journal.Step {
			if _, err := a.Get("k"); !errors.Is(err, journal.ErrNotFound) {
				t.Fatalf("Get: %v", err)
			}
			return journal.Step{}
		},
		change: func(t *testing.T, _, b *Journal) { mustApply(t, b, "k", claim("k", time.Minute)) },
		check: func(t *testing.T, a *Journal, _ journal.Step) {
			st := mustApply(t, a, "k", claim("k", time.Minute)) // no change: b's step is returned
			if st.Epoch == a.Epoch() {
				t.Fatalf("a claimed a step b holds: %+v", st)
			}
		},
	}, {
		name: "claimed here, then taken over",
		hint: func(t *testing.T, a *Journal) journal.Step { return mustApply(t, a, "k", claim("k", time.Minute)) },
		change: func(t *testing.T, _, b *Journal) {
			mustApply(t, b, "k", func(cur *journal.Step) (journal.Change, error) {
				return journal.Change{Step: *cur, Claim: true, Lease: time.Minute}, nil
			})
		},
		check: func(t *testing.T, a *Journal, mine journal.Step) {
			_, err := a.Apply(context.Background(), "k", commit(mine.Epoch, mine.Fence, "late"))
			if !errors.Is(err, journal.ErrFenced) {
				t.Fatalf("a's late outcome after a takeover: %v, want ErrFenced", err)
			}
		},
	}, {
		name: "claimed here, deleted, claimed again elsewhere at the same revision",
		hint: func(t *testing.T, a *Journal) journal.Step { return mustApply(t, a, "k", claim("k", time.Minute)) },
		change: func(t *testing.T, a, b *Journal) {
			if _, err := a.pool.Exec(context.Background(), "DELETE FROM steps WHERE key = 'k'"); err != nil {
				t.Fatal(err)
			}
			mustApply(t, b, "k", claim("k", time.Minute))
		},
		check: func(t *testing.T, a *Journal, mine journal.Step) {
			_, err := a.Apply(context.Background(), "k", commit(mine.Epoch, mine.Fence, "late"))
			if !errors.Is(err, journal.ErrFenced) {
				t.Fatalf("a's outcome on a step created again: %v, want ErrFenced", err)
			}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			a := openTest(t, Options{})
			b := openTest(t, Options{DSN: a.opts.DSN, Schema: a.Schema()})
			mine := tc.hint(t, a)
			if _, ok := a.hints.m["k"]; !ok {
				t.Fatal("no hint was left")
			}
			tc.change(t, a, b)
			before, _ := b.Get("k")
			tc.check(t, a, mine)
			after, err := b.Get("k")
			if err != nil {
				t.Fatal(err)
			}
			if after.Revision != before.Revision || after.Epoch != before.Epoch || after.Status != before.Status {
				t.Fatalf("a changed the step on a stale hint: before %+v, after %+v", before, after)
			}
			mustCheck(t, a)
		})
	}
}

// A hint's clock never runs ahead of the database's.
func TestHintClock(t *testing.T) {
	j := openTest(t, Options{})
	if _, err := j.Get("k"); !errors.Is(err, journal.ErrNotFound) {
		t.Fatal(err)
	}
	h, ok := j.hints.take("k")
	if !ok {
		t.Fatal("no hint of k")
	}
	var now time.Time
	if err := j.pool.QueryRow(context.Background(), "SELECT now()").Scan(&now); err != nil {
		t.Fatal(err)
	}
	if est := h.now(); est.After(now) {
		t.Fatalf("hint's clock %v is ahead of the database's %v", est, now)
	}
}

// Hints are bounded, and expired ones are not used.
func TestHintsBounded(t *testing.T) {
	var hs hints
	for i := range maxHints + 10 {
		hs.put(string(rune('a'+i%26))+time.Duration(i).String(), nil, time.Now())
	}
	if n := len(hs.m); n > maxHints {
		t.Fatalf("%d hints, max %d", n, maxHints)
	}
	hs.put("old", nil, time.Now())
	h := hs.m["old"]
	h.local = h.local.Add(-hintTTL - time.Second)
	hs.m["old"] = h
	if _, ok := hs.take("old"); ok {
		t.Fatal("an expired hint was used")
	}
	hs.put("answered", &journal.Step{Response: &journal.Response{Status: 200}}, time.Now())
	if _, ok := hs.m["answered"]; ok {
		t.Fatal("a step with a stored response was hinted")
	}
}
