package bolt

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/toolguard/toolguard/journal"
)

// downgradeToV1 rewrites a layout-2 journal the way a layout-1 build wrote
// it: steps under their keys in "steps", the status index keyed by status +
// step key, and schema 1 in meta.
func downgradeToV1(t *testing.T, path string) {
	t.Helper()
	updateFile(t, path, func(tx *bbolt.Tx) error {
		bk, err := openBuckets(tx)
		if err != nil {
			return err
		}
		old, err := tx.CreateBucket(bucketStepsV1)
		if err != nil {
			return err
		}
		if err := tx.DeleteBucket(bucketByStatus); err != nil {
			return err
		}
		byStatus, err := tx.CreateBucket(bucketByStatusV1)
		if err != nil {
			return err
		}
		byUpdated, err := tx.CreateBucket(bucketByUpdatedV1)
		if err != nil {
			return err
		}
		err = bk.forEachStep(func(_ []byte, s *journal.Step, err error) error {
			if err != nil {
				return err
			}
			s.Schema = 1
			v, err := marshalStep(s)
			if err != nil {
				return err
			}
			if err := old.Put([]byte(s.Key), v); err != nil {
				return err
			}
			if err := byUpdated.Put(timeIndexKey(s.UpdatedAt, s.Key), []byte{}); err != nil {
				return err
			}
			return byStatus.Put(append([]byte{byte(s.Status)}, s.Key...), []byte{})
		})
		if err != nil {
			return err
		}
		for _, name := range [][]byte{bucketRecords, bucketKeys} {
			if err := tx.DeleteBucket(name); err != nil {
				return err
			}
		}
		return putUint(bk.meta, keySchema, 1)
	})
}

// updateFile runs fn in a write transaction on the bbolt file at path,
// below the journal's API.
func updateFile(t *testing.T, path string, fn func(tx *bbolt.Tx) error) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(fn); err != nil {
		t.Fatalf("update %s: %v", path, err)
	}
}

// interrupted puts layout-2 buckets with a stray step beside layout 1.
func interrupted(t *testing.T, path string) {
	t.Helper()
	updateFile(t, path, func(tx *bbolt.Tx) error {
		if err := resetV2(tx); err != nil {
			return err
		}
		return moveStep(tx, []byte("stray"), []byte(`{"key":"stray","status":"committed"}`))
	})
}

func seedForMigration(t *testing.T, path string) []journal.Step {
	t.Helper()
	b, err := Open(path, Options{Now: testClock()})
	if err != nil {
		t.Fatal(err)
	}
	b.anyTransition = true // seeds states directly
	seed(t, b,
		journal.Step{Key: "c", Status: journal.StatusStarted, Workflow: "a"},
		journal.Step{Key: "a", Status: journal.StatusCommitted, Workflow: "ab"},
		journal.Step{Key: "e", Status: journal.StatusStarted, Hold: journal.HoldNeedsReview, Workflow: "a"},
		journal.Step{Key: "b", Status: journal.StatusPrepared, Hold: journal.HoldAwaitingApproval},
		journal.Step{Key: "d", Status: journal.StatusFailed, Hold: journal.HoldNeedsReview},
	)
	mustApply(t, b, "c", transition(journal.StatusCommitted, journal.HoldNone, false))
	steps, err := b.List(journal.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	for i := range steps {
		steps[i].Schema = 1
	}
	return unread(steps)
}

func TestOpenUpgradesLayout1(t *testing.T) {
	defer func(n int) { migrateChunk = n }(migrateChunk)
	migrateChunk = 2 // several transactions per phase
	path := tempPath(t)
	want := seedForMigration(t, path)
	downgradeToV1(t, path)
	// What an upgrade interrupted half way leaves: layout-2 buckets filled
	// in part (here with a stray entry), layout 1 intact.
	interrupted(t, path)

	_, err := Open(path, Options{ReadOnly: true})
	if !errors.Is(err, ErrSchema) {
		t.Fatalf("read-only open of a layout-1 journal: %v, want ErrSchema", err)
	}

	b := mustOpenPath(t, path, Options{Now: testClock()})
	got, err := b.List(journal.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(unread(got), want) {
		t.Errorf("steps after the upgrade:\n got %+v\nwant %+v", got, want)
	}
	if got, err := b.List(journal.Filter{Status: journal.StatusCommitted}); err != nil || stepKeys(got) != "a,c" {
		t.Errorf("committed steps after the upgrade: %v %v, want a,c", stepKeys(got), err)
	}
	// The upgraded journal takes new writes like any other.
	mustApply(t, b, "f", start("f", "a"))
	mustApply(t, b, "e", transition(journal.StatusFailed, journal.HoldNone, false))
	if errs := b.Check(); len(errs) > 0 {
		t.Fatalf("check after the upgrade: %v", errors.Join(errs...))
	}
}

func TestCompactUpgradesLayout1(t *testing.T) {
	path := tempPath(t)
	want := seedForMigration(t, path)
	downgradeToV1(t, path)
	if _, _, err := Compact(path, time.Second); err != nil {
		t.Fatalf("compact a layout-1 journal: %v", err)
	}
	b := mustOpenPath(t, path, Options{ReadOnly: true})
	got, err := b.List(journal.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(unread(got), want) {
		t.Errorf("steps after compact:\n got %+v\nwant %+v", got, want)
	}
}

// unread clears when each step was read (ReadAt), which differs between
// two reads of the same record.
func unread(steps []journal.Step) []journal.Step {
	for i := range steps {
		steps[i].ReadAt = time.Time{}
	}
	return steps
}
