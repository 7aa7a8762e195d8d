package bolt

import (
	"bytes"
	"fmt"
	"log/slog"

	"go.etcd.io/bbolt"

	"github.com/toolguard/toolguard/journal"
)

// Layout 1 kept each step under its key in bucket "steps", indexed
// statuses in "idx_status" by status + step key and update times in
// "idx_updated" by time + step key. Layout 2 (records.go) stores steps by
// record sequence and indexes statuses in "idx_by_status" by status +
// update time + step key, which serves walks by time too; every other
// bucket is the same.
var (
	bucketStepsV1     = []byte("steps")
	bucketByStatusV1  = []byte("idx_status")
	bucketByUpdatedV1 = []byte("idx_updated")
)

// migrateChunk is the number of steps one upgrade transaction moves. bbolt
// splits a node only when it commits, so one transaction that inserted a
// million entries would shift ever larger nodes on every insert. Tests
// make it small.
var migrateChunk = 20_000

// upgrade rewrites a layout-1 journal into layout 2, in transactions of
// migrateChunk steps. Until the last one the file stays layout 1, with its
// layout-1 buckets untouched: an upgrade that stops half way (a crash, a
// full disk) starts again from scratch at the next writable Open, and
// meanwhile an older toolguard still reads the file. The last transaction
// checks that every step was moved, then drops the layout-1 buckets and
// stamps the schema. It is a no-op on a layout-2 or new file.
func upgrade(db *bbolt.DB, log *slog.Logger) error {
	var v uint64
	var n int
	if err := db.View(func(tx *bbolt.Tx) error {
		if meta := tx.Bucket(bucketMeta); meta != nil {
			v = getUint(meta, keySchema)
		}
		if old := tx.Bucket(bucketStepsV1); old != nil {
			n = old.Stats().KeyN
		}
		return nil
	}); err != nil || v != 1 {
		return err
	}
	log.Info("journal: upgrading the file layout; this runs once", "from", 1, "to", journal.SchemaVersion, "steps", n)
	if err := db.Update(resetV2); err != nil {
		return fmt.Errorf("upgrade journal layout: %w", err)
	}
	if err := chunked(db, bucketStepsV1, moveStep); err != nil {
		return fmt.Errorf("upgrade journal layout: move steps: %w", err)
	}
	if err := chunked(db, bucketByUpdatedV1, indexStatus); err != nil {
		return fmt.Errorf("upgrade journal layout: index statuses: %w", err)
	}
	if err := db.Update(finishV2); err != nil {
		return fmt.Errorf("upgrade journal layout: %w", err)
	}
	log.Info("journal: upgraded the file layout; `toolguard journal compact` returns the space the old layout took",
		"from", 1, "to", journal.SchemaVersion, "steps", n)
	return nil
}

// resetV2 empties the layout-2 step buckets, which an earlier, interrupted
// upgrade may have filled in part.
func resetV2(tx *bbolt.Tx) error {
	if tx.Bucket(bucketStepsV1) == nil || tx.Bucket(bucketByUpdatedV1) == nil {
		return fmt.Errorf("%w: layout 1 journal without its steps or time index", journal.ErrCorrupt)
	}
	for _, name := range [][]byte{bucketRecords, bucketKeys, bucketByStatus} {
		if tx.Bucket(name) != nil {
			if err := tx.DeleteBucket(name); err != nil {
				return fmt.Errorf("empty %s: %w", name, err)
			}
		}
		if _, err := tx.CreateBucket(name); err != nil {
			return fmt.Errorf("create %s: %w", name, err)
		}
	}
	return nil
}

// chunked calls fn with every entry of bucket src, in key order, in
// transactions of migrateChunk entries.
func chunked(db *bbolt.DB, src []byte, fn func(tx *bbolt.Tx, k, v []byte) error) error {
	var last []byte // the last key done; nil before the first
	for done := false; !done; {
		err := db.Update(func(tx *bbolt.Tx) error {
			c := tx.Bucket(src).Cursor()
			k, v := c.First()
			if last != nil {
				if k, v = c.Seek(last); bytes.Equal(k, last) {
					k, v = c.Next()
				}
			}
			for range migrateChunk {
				if k == nil {
					done = true
					return nil
				}
				if err := fn(tx, k, v); err != nil {
					return err
				}
				last = append(last[:0], k...)
				k, v = c.Next()
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// moveStep stores a layout-1 step record under a new record sequence.
func moveStep(tx *bbolt.Tx, k, v []byte) error {
	s, err := unmarshalStep(v)
	if err != nil {
		return fmt.Errorf("%w: step %s: %v", journal.ErrCorrupt, k, err)
	}
	if s.Key != string(k) {
		return fmt.Errorf("%w: step %s: record says key %q", journal.ErrCorrupt, k, s.Key)
	}
	bk := &buckets{records: tx.Bucket(bucketRecords), keys: tx.Bucket(bucketKeys)}
	bk.records.FillPercent, bk.keys.FillPercent = appendFill, appendFill // both grow in key order here
	return bk.putStep(s.Key, &stepRef{}, v)
}

// indexStatus adds the status entry of the step of one time-index entry.
// The time index is walked in time order, so each status's entries are
// added at its end.
func indexStatus(tx *bbolt.Tx, k, _ []byte) error {
	if len(k) <= 8 {
		return fmt.Errorf("%w: time index key %x", journal.ErrCorrupt, k)
	}
	v := tx.Bucket(bucketStepsV1).Get(k[8:])
	if v == nil {
		return fmt.Errorf("%w: time index entry %x without its step", journal.ErrCorrupt, k)
	}
	s, err := unmarshalStep(v)
	if err != nil {
		return fmt.Errorf("%w: step %s: %v", journal.ErrCorrupt, k[8:], err)
	}
	idx := tx.Bucket(bucketByStatus)
	idx.FillPercent = appendFill
	return idx.Put(statusIndexKey(s.Status, s.UpdatedAt, s.Key), []byte{})
}

// finishV2 checks that every step was moved and indexed, drops the
// layout-1 buckets and stamps layout 2.
func finishV2(tx *bbolt.Tx) error {
	old := tx.Bucket(bucketStepsV1).Stats().KeyN
	if got := tx.Bucket(bucketKeys).Stats().KeyN; got != old {
		return fmt.Errorf("%w: moved %d steps of %d", journal.ErrCorrupt, got, old)
	}
	if got := tx.Bucket(bucketByStatus).Stats().KeyN; got != old {
		return fmt.Errorf("%w: indexed %d steps of %d (the time index does not match the steps)", journal.ErrCorrupt, got, old)
	}
	for _, name := range [][]byte{bucketStepsV1, bucketByStatusV1, bucketByUpdatedV1} {
		if tx.Bucket(name) == nil {
			continue
		}
		if err := tx.DeleteBucket(name); err != nil {
			return fmt.Errorf("drop %s: %w", name, err)
		}
	}
	return putUint(tx.Bucket(bucketMeta), keySchema, journal.SchemaVersion)
}
