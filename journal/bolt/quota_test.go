package bolt

import (
	"context"
	"errors"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/toolguard/toolguard/journal"
)

// TestHoldsIndexedOnOpen: a file written before holds were counted by
// caller and indexed for expiry reads without those buckets, and gets
// them, filled from its held steps, at its next writable Open.
func TestHoldsIndexedOnOpen(t *testing.T) {
	path := tempPath(t)
	b := mustOpenPath(t, path, Options{Now: testClock()})
	held := func(key, scope string, h journal.Hold) journal.Step {
		return journal.Step{Key: key, API: "payments", Route: "create_invoice", CredentialMAC: scope,
			Status: journal.StatusPrepared, Hold: h, HoldReason: "approval_required"}
	}
	mustApply(t, b, "a1", put(held("a1", "caller-a", journal.HoldAwaitingApproval)))
	mustApply(t, b, "a2", put(held("a2", "caller-a", journal.HoldNeedsReview)))
	mustApply(t, b, "b1", put(held("b1", "caller-b", journal.HoldAwaitingApproval)))
	mustApply(t, b, "n1", put(held("n1", "caller-a", journal.HoldNone)))
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// Make it a file of the version before.
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, name := range quotaBuckets {
			if err := tx.DeleteBucket(name); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketMeta).Delete(keyHoldsIndexed)
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	checkFile(t, path) // read-only, without the buckets

	b = mustOpenPath(t, path, Options{Now: testClock()})
	err = b.db.View(func(tx *bbolt.Tx) error {
		bk, err := openBuckets(tx)
		if err != nil {
			return err
		}
		if a, c := getUint(bk.holdCounts, holdCountKey("caller-a")), getUint(bk.holdCounts, holdCountKey("caller-b")); a != 2 || c != 1 {
			t.Errorf("hold counts: caller-a %d, caller-b %d; want 2 and 1", a, c)
		}
		if n := bk.byExpiry.Stats().KeyN; n != 2 {
			t.Errorf("expiry index has %d entries, want a1 and b1", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Apply(context.Background(), "a3", func(*journal.Step) (journal.Change, error) {
		return journal.Change{Step: held("a3", "caller-a", journal.HoldAwaitingApproval), MaxHolds: 2}, nil
	})
	if !errors.Is(err, journal.ErrTooManyHolds) {
		t.Errorf("a third hold of caller-a: %v, want ErrTooManyHolds", err)
	}
}
