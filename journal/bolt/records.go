package bolt

import (
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/toolguard/toolguard/journal"
)

// Step records.
//
// A step is stored under an 8-byte sequence number handed out when its key
// is first written (bucket step_records), and bucket step_keys maps each key
// to that number. Keys are hashes, so a B-tree keyed by them is written at
// random: every write would dirty a leaf and a branch page of its own, and a
// group commit of n writes would write about 2n pages. Keyed by sequence,
// the records of recent steps share the pages at the end of the tree, so
// the outcome of a call lands on a page that other calls of the same commit
// dirty too; only the first write of a key pays a random insert, into
// step_keys, whose entries are small.

// stepRef locates a stored step record.
type stepRef struct {
	seq []byte // 8-byte big-endian; nil for a key not yet stored
}

// lookup returns the record sequence of key, or nil when key has no step.
func (bk *buckets) lookup(key string) []byte {
	if key == "" {
		return nil
	}
	return bk.keys.Get([]byte(key))
}

// getStep decodes the step of key; ErrNotFound when there is none.
func (bk *buckets) getStep(key string) (*journal.Step, error) {
	s, _, err := bk.loadStep(key)
	return s, err
}

// loadStep decodes the step of key and returns where it is stored;
// ErrNotFound when there is none.
func (bk *buckets) loadStep(key string) (*journal.Step, stepRef, error) {
	seq := bk.lookup(key)
	if seq == nil {
		return nil, stepRef{}, journal.ErrNotFound
	}
	if len(seq) != 8 {
		return nil, stepRef{}, fmt.Errorf("%w: key %s maps to malformed record number %x", journal.ErrCorrupt, key, seq)
	}
	v := bk.records.Get(seq)
	if v == nil {
		return nil, stepRef{}, fmt.Errorf("%w: key %s maps to record %d, which is missing", journal.ErrCorrupt, key, binary.BigEndian.Uint64(seq))
	}
	s, err := unmarshalStep(v)
	if err != nil {
		return nil, stepRef{}, fmt.Errorf("%w: %v", journal.ErrCorrupt, err)
	}
	return s, stepRef{seq: append([]byte(nil), seq...)}, nil
}

// putStep stores data as the record of key: in place when ref locates an
// existing record, else under a new sequence number, which ref then
// locates.
func (bk *buckets) putStep(key string, ref *stepRef, data []byte) error {
	seq := ref.seq
	if seq == nil {
		n, err := bk.records.NextSequence()
		if err != nil {
			return fmt.Errorf("next record seq: %w", err)
		}
		seq = seqKey(n)
		if err := bk.keys.Put([]byte(key), seq); err != nil {
			return err
		}
		ref.seq = seq
	}
	return bk.records.Put(seq, data)
}

// removeStep deletes the record of key and its key entry.
func (bk *buckets) removeStep(key string) error {
	seq := bk.lookup(key)
	if seq == nil {
		return nil
	}
	seq = append([]byte(nil), seq...) // Delete may move the page it points into
	if err := bk.keys.Delete([]byte(key)); err != nil {
		return err
	}
	return bk.records.Delete(seq)
}

// forEachStep calls fn with every step record in record order (the order in
// which keys were first written); fn gets the decode error of a bad record
// and may stop the walk by returning an error.
func (bk *buckets) forEachStep(fn func(seq []byte, s *journal.Step, err error) error) error {
	c := bk.records.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		s, err := unmarshalStep(v)
		if err := fn(k, s, err); err != nil {
			return err
		}
	}
	return nil
}

// marshalStep encodes a step record.
func marshalStep(s *journal.Step) ([]byte, error) { return json.Marshal(s) }

// unmarshalStep decodes a step record.
func unmarshalStep(b []byte) (*journal.Step, error) {
	var s journal.Step
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("decode step: %w", err)
	}
	return &s, nil
}
