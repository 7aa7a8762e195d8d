package bolt

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	"go.etcd.io/bbolt"

	"github.com/toolguard/toolguard/journal"
)

// Bucket layout. Every index key ends with the step key, and index values
// are empty: an index entry exists exactly when its step has that attribute.
var (
	// bucketMeta holds the schema version, the epoch, the fence counter and
	// the step counters (keys below); values are 8-byte big-endian.
	bucketMeta = []byte("meta")
	// bucketRecords maps an 8-byte big-endian record seq to a step as JSON;
	// the bucket's sequence is the last seq handed out (see records.go).
	bucketRecords = []byte("step_records")
	// bucketKeys maps a step key to the 8-byte seq of its record.
	bucketKeys = []byte("step_keys")
	// bucketEvents maps an 8-byte big-endian seq to the event as JSON; the
	// bucket's sequence is the last seq handed out.
	bucketEvents = []byte("events")
	// bucketByStatus: status byte + 8-byte big-endian UpdatedAt (Unix ns,
	// sign bit flipped so that byte order is time order) + step key. A
	// status's entries are in update order, new ones land at the end of its
	// range, and a merge of the ranges walks all steps by time (bytime.go).
	bucketByStatus = []byte("idx_by_status")
	// bucketByHold: hold byte + step key, for held steps only.
	bucketByHold = []byte("idx_hold")
	// bucketByWorkflow: uvarint(len(workflow)) + workflow + step key, for
	// steps with a workflow only. The length prefix keeps "a"+"bc…" apart
	// from "ab"+"c…".
	bucketByWorkflow = []byte("idx_workflow")
	// bucketByVerify: 8-byte VerifyBy (as in idx_by_status) + step key, for
	// steps with a pending verification only.
	bucketByVerify = []byte("idx_verify")
	// bucketWorkflows maps a workflow id to its record as JSON.
	bucketWorkflows = []byte("workflows")

	allBuckets = [][]byte{bucketMeta, bucketRecords, bucketKeys, bucketEvents,
		bucketByStatus, bucketByHold, bucketByWorkflow, bucketByVerify, bucketWorkflows}

	// The buckets of holds and budgets (quota.go). A writable Open creates
	// and fills them in files written before they existed; a read-only
	// Open of such a file goes without them.
	//
	// bucketHoldCounts maps "h" + a caller's credential MAC to the 8-byte
	// count of its held steps (Change.MaxHolds); a count that drops to
	// zero is deleted.
	bucketHoldCounts = []byte("count_holds")
	// bucketByBudget: budgetPrefix(scope, api, route) + 8-byte CreatedAt
	// (as in idx_by_status) + step key, for Budgeted steps only.
	bucketByBudget = []byte("idx_budget")
	// bucketByExpiry: 8-byte UpdatedAt + step key, for expirable holds
	// only (journal.Step.Expirable).
	bucketByExpiry = []byte("idx_expiry")

	quotaBuckets = [][]byte{bucketHoldCounts, bucketByBudget, bucketByExpiry}
)

// Keys of the meta bucket.
var (
	keySchema = []byte("schema")
	keyEpoch  = []byte("epoch")
	keyFence  = []byte("fence")
	// Step counters: prefix + status or hold byte.
	keyCountStatus = []byte("count/status/")
	keyCountHold   = []byte("count/hold/")
)

// appendFill is the FillPercent of buckets written mostly at their end.
const appendFill = 0.9

// buckets are the journal's buckets within one transaction.
type buckets struct {
	tx                           *bbolt.Tx
	meta, records, keys, events  *bbolt.Bucket
	byStatus, byHold, byWorkflow *bbolt.Bucket
	byVerify, workflows          *bbolt.Bucket
	// The buckets of quota.go; nil in a read-only transaction of a file
	// written before they existed.
	holdCounts, byBudget, byExpiry *bbolt.Bucket
}

func openBuckets(tx *bbolt.Tx) (*buckets, error) {
	bk := &buckets{tx: tx}
	for _, p := range []struct {
		b    **bbolt.Bucket
		name []byte
	}{
		{&bk.meta, bucketMeta}, {&bk.records, bucketRecords}, {&bk.keys, bucketKeys}, {&bk.events, bucketEvents},
		{&bk.byStatus, bucketByStatus}, {&bk.byHold, bucketByHold},
		{&bk.byWorkflow, bucketByWorkflow},
		{&bk.byVerify, bucketByVerify}, {&bk.workflows, bucketWorkflows},
	} {
		if *p.b = tx.Bucket(p.name); *p.b == nil {
			return nil, fmt.Errorf("%w: bucket %s is missing", journal.ErrCorrupt, p.name)
		}
	}
	bk.holdCounts, bk.byBudget, bk.byExpiry = tx.Bucket(bucketHoldCounts), tx.Bucket(bucketByBudget), tx.Bucket(bucketByExpiry)
	if tx.Writable() && (bk.holdCounts == nil || bk.byBudget == nil || bk.byExpiry == nil) {
		return nil, fmt.Errorf("%w: a bucket of holds or budgets is missing", journal.ErrCorrupt)
	}
	// Events and step records grow at their end: fill split pages well
	// beyond bbolt's default half, or they stay half empty for ever.
	bk.events.FillPercent, bk.records.FillPercent = appendFill, appendFill
	return bk, nil
}

func statusIndexKey(s journal.Status, updated time.Time, key string) []byte {
	return append(append([]byte{byte(s)}, timeBytes(updated)...), key...)
}

func holdIndexKey(h journal.Hold, key string) []byte { return append([]byte{byte(h)}, key...) }

func workflowPrefix(w string) []byte {
	return append(binary.AppendUvarint(nil, uint64(len(w))), w...)
}

func workflowIndexKey(w, key string) []byte { return append(workflowPrefix(w), key...) }

// parseWorkflowIndexKey splits a workflow index key; ok is false when it is
// malformed.
func parseWorkflowIndexKey(k []byte) (workflow, key string, ok bool) {
	n, w := binary.Uvarint(k)
	if w <= 0 || uint64(len(k)-w) < n {
		return "", "", false
	}
	return string(k[w : w+int(n)]), string(k[w+int(n):]), true
}

func timeBytes(t time.Time) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(t.UnixNano())^(1<<63))
}

func timeIndexKey(t time.Time, key string) []byte { return append(timeBytes(t), key...) }

// indexKeys returns the index entries a step has, one per index bucket; nil
// for an index the step is not in.
func (bk *buckets) indexKeys(s *journal.Step) []indexEntry {
	e := []indexEntry{
		{bk.byStatus, statusIndexKey(s.Status, s.UpdatedAt, s.Key)},
	}
	if s.Hold != journal.HoldNone {
		e = append(e, indexEntry{bk.byHold, holdIndexKey(s.Hold, s.Key)})
	}
	if s.Workflow != "" {
		e = append(e, indexEntry{bk.byWorkflow, workflowIndexKey(s.Workflow, s.Key)})
	}
	if !s.VerifyBy.IsZero() {
		e = append(e, indexEntry{bk.byVerify, timeIndexKey(s.VerifyBy, s.Key)})
	}
	if s.Budgeted && bk.byBudget != nil {
		e = append(e, indexEntry{bk.byBudget, budgetIndexKey(s.CredentialMAC, s.API, s.Route, s.CreatedAt, s.Key)})
	}
	if s.Expirable() && bk.byExpiry != nil {
		e = append(e, indexEntry{bk.byExpiry, timeIndexKey(s.UpdatedAt, s.Key)})
	}
	return e
}

type indexEntry struct {
	b   *bbolt.Bucket
	key []byte
}

// reindex replaces the index entries and counters of old (nil for a new
// step) with those of s. Entries and counters that do not change are left
// alone.
func (bk *buckets) reindex(old, s *journal.Step) error {
	add := bk.indexKeys(s)
	if old != nil {
		for _, e := range bk.indexKeys(old) {
			if i := findEntry(add, e); i >= 0 {
				add[i].b = nil // already there
				continue
			}
			if err := e.b.Delete(e.key); err != nil {
				return fmt.Errorf("delete index entry: %w", err)
			}
		}
	}
	for _, e := range add {
		if e.b == nil {
			continue
		}
		if err := e.b.Put(e.key, []byte{}); err != nil {
			return fmt.Errorf("put index entry: %w", err)
		}
	}
	if old != nil && old.Status == s.Status && old.Hold == s.Hold && old.CredentialMAC == s.CredentialMAC {
		return nil
	}
	if old != nil {
		if err := bk.count(old, -1); err != nil {
			return err
		}
	}
	return bk.count(s, +1)
}

func findEntry(entries []indexEntry, e indexEntry) int {
	for i, x := range entries {
		if x.b == e.b && bytes.Equal(x.key, e.key) {
			return i
		}
	}
	return -1
}

// count adds delta to the counters of s's status and hold, and of its
// caller's holds when it is held.
func (bk *buckets) count(s *journal.Step, delta int64) error {
	for _, k := range [][]byte{countKey(keyCountStatus, byte(s.Status)), countKey(keyCountHold, byte(s.Hold))} {
		if err := putUint(bk.meta, k, uint64(int64(getUint(bk.meta, k))+delta)); err != nil {
			return err
		}
	}
	if s.Held() && bk.holdCounts != nil {
		return bk.countHold(s.CredentialMAC, delta)
	}
	return nil
}

// countKey is the meta key of the counter of one status or hold.
func countKey(prefix []byte, v byte) []byte { return append(bytes.Clone(prefix), v) }

// has reports whether b holds key k.
func has(b *bbolt.Bucket, k []byte) bool {
	got, _ := b.Cursor().Seek(k)
	return got != nil && bytes.Equal(got, k)
}

func getUint(b *bbolt.Bucket, k []byte) uint64 {
	v := b.Get(k)
	if len(v) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

func putUint(b *bbolt.Bucket, k []byte, v uint64) error {
	if err := b.Put(k, binary.BigEndian.AppendUint64(nil, v)); err != nil {
		return fmt.Errorf("put meta %s: %w", k, err)
	}
	return nil
}

func seqKey(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }
