package journal

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Layout 1 kept each step under its key in bucket "steps" and keyed the
// status index by status + step key. Layout 2 (records.go) stores steps by
// record sequence and keys the status index by status + update time + step
// key. migrateV1 rewrites a layout-1 journal into layout 2 inside the
// transaction that opens it, so a failed upgrade leaves the file as it was.
var bucketStepsV1 = []byte("steps")

// migrateV1 moves every step of a layout-1 journal into the layout-2
// buckets (which initMeta has created, empty) and rebuilds the status
// index. Events, workflows, counters and the other indexes are unchanged.
func migrateV1(tx *bolt.Tx) (int, error) {
	old := tx.Bucket(bucketStepsV1)
	if old == nil {
		return 0, fmt.Errorf("%w: layout 1 journal without a steps bucket", ErrCorrupt)
	}
	bk, err := openBuckets(tx)
	if err != nil {
		return 0, err
	}
	if bk.keys.Stats().KeyN != 0 || bk.records.Sequence() != 0 {
		return 0, fmt.Errorf("%w: layout 1 journal already has layout 2 steps", ErrCorrupt)
	}
	if err := tx.DeleteBucket(bucketByStatus); err != nil {
		return 0, fmt.Errorf("drop layout 1 status index: %w", err)
	}
	if bk.byStatus, err = tx.CreateBucket(bucketByStatus); err != nil {
		return 0, fmt.Errorf("create status index: %w", err)
	}
	n := 0
	err = old.ForEach(func(k, v []byte) error {
		s, err := unmarshalStep(v)
		if err != nil {
			return fmt.Errorf("%w: step %s: %v", ErrCorrupt, k, err)
		}
		if s.Key != string(k) {
			return fmt.Errorf("%w: step %s: record says key %q", ErrCorrupt, k, s.Key)
		}
		if err := bk.putStep(s.Key, stepRef{}, v); err != nil {
			return fmt.Errorf("move step %s: %w", k, err)
		}
		if err := bk.byStatus.Put(statusIndexKey(s.Status, s.UpdatedAt, s.Key), []byte{}); err != nil {
			return fmt.Errorf("index step %s: %w", k, err)
		}
		n++
		return nil
	})
	if err != nil {
		return 0, err
	}
	if err := tx.DeleteBucket(bucketStepsV1); err != nil {
		return 0, fmt.Errorf("drop layout 1 steps: %w", err)
	}
	return n, nil
}
