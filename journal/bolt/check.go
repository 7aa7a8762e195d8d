package bolt

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/toolguard/toolguard/journal"
)

// maxCheckErrors bounds the problems Check reports; a last error says how
// many more there were.
const maxCheckErrors = 1000

// Check verifies the journal and returns every problem found, or nil. It
// runs bbolt's page-level consistency check and toolguard's invariants:
// every step record decodes and is the one its key maps to, with a known status,
// hold and schema; every committed or verified step has a Response or
// Evidence; no step has a Fence above the fence counter or an Epoch above
// the current epoch; every index entry has its step and every step its
// index entries; the counters match the steps; event seqs strictly
// increase and do not exceed the events' sequence. Each error names the key
// (or seq) and what is wrong.
//
// Check reads the whole file in one read transaction; it is meant for
// tests, "toolguard journal check" and operators, not for the hot path.
func (b *Journal) Check() []error {
	c := &checker{}
	err := b.view("check journal", func(bk *buckets) error {
		for err := range bk.tx.Check() {
			c.add(fmt.Errorf("bbolt: %w", err))
		}
		c.steps(bk)
		c.indexes(bk)
		c.counters(bk)
		c.events(bk)
		c.workflows(bk)
		return nil
	})
	if err != nil {
		c.add(err)
	}
	if c.more > 0 {
		c.errs = append(c.errs, fmt.Errorf("… and %d more problems", c.more))
	}
	return c.errs
}

type checker struct {
	errs     []error
	more     int
	byStatus map[journal.Status]uint64
	byHold   map[journal.Hold]uint64
	// heldBy counts the held steps of each caller (credential MAC).
	heldBy map[string]uint64
}

func (c *checker) add(err error) {
	if len(c.errs) < maxCheckErrors {
		c.errs = append(c.errs, err)
	} else {
		c.more++
	}
}

func (c *checker) addf(format string, args ...any) { c.add(fmt.Errorf(format, args...)) }

// steps checks every step record, its key entry and its index entries,
// then every key entry.
func (c *checker) steps(bk *buckets) {
	epoch, fence := getUint(bk.meta, keyEpoch), getUint(bk.meta, keyFence)
	c.byStatus, c.byHold, c.heldBy = map[journal.Status]uint64{}, map[journal.Hold]uint64{}, map[string]uint64{}
	top := bk.records.Sequence()
	_ = bk.forEachStep(func(seq []byte, s *journal.Step, err error) error {
		if len(seq) != 8 || binary.BigEndian.Uint64(seq) > top {
			c.addf("step record %x: malformed or above the record sequence %d", seq, top)
		}
		if err != nil {
			c.addf("step record %x: %w", seq, err)
			return nil
		}
		c.byStatus[s.Status]++
		c.byHold[s.Hold]++
		if s.Held() {
			c.heldBy[s.CredentialMAC]++
		}
		if got := bk.lookup(s.Key); !bytes.Equal(got, seq) {
			c.addf("step %s: record %x is not the one its key maps to (%x)", s.Key, seq, got)
		}
		c.step(s.Key, s, epoch, fence)
		for _, e := range bk.indexKeys(s) {
			if !has(e.b, e.key) {
				c.addf("step %s: no entry in index %s", s.Key, bucketName(bk, e.b))
			}
		}
		return nil
	})
	cur := bk.keys.Cursor()
	for k, _ := cur.First(); k != nil; k, _ = cur.Next() {
		s, err := bk.getStep(string(k))
		switch {
		case err != nil:
			c.addf("step %s: %w", k, err)
		case s.Key != string(k):
			c.addf("step %s: stored under the wrong key (record says %q)", k, s.Key)
		}
	}
}

func (c *checker) step(key string, s *journal.Step, epoch, fence uint64) {
	if s.Schema < 1 || s.Schema > journal.SchemaVersion {
		c.addf("step %s: schema %d (want 1 to %d)", key, s.Schema, journal.SchemaVersion)
	}
	if s.Status < journal.StatusPrepared || s.Status > journal.StatusFailed {
		c.addf("step %s: invalid %v", key, s.Status)
	}
	if s.Hold > journal.HoldNeedsReview {
		c.addf("step %s: invalid %v", key, s.Hold)
	}
	if (s.Status == journal.StatusCommitted || s.Status == journal.StatusVerified) && s.Response == nil && s.Evidence == "" {
		c.addf("step %s: %v without a response or evidence", key, s.Status)
	}
	if s.Fence > fence {
		c.addf("step %s: fence %d is above the fence counter %d", key, s.Fence, fence)
	}
	if s.Epoch > epoch {
		c.addf("step %s: epoch %d is above the current epoch %d", key, s.Epoch, epoch)
	}
}

// indexes checks that every index entry points at a step with that
// attribute.
func (c *checker) indexes(bk *buckets) {
	c.index(bk, bk.byStatus, func(k []byte) (string, func(*journal.Step) bool) {
		if len(k) < 10 {
			return "", nil
		}
		return string(k[9:]), func(s *journal.Step) bool {
			return byte(s.Status) == k[0] && string(timeBytes(s.UpdatedAt)) == string(k[1:9])
		}
	})
	c.index(bk, bk.byHold, func(k []byte) (string, func(*journal.Step) bool) {
		return string(k[1:]), func(s *journal.Step) bool { return s.Hold != journal.HoldNone && byte(s.Hold) == k[0] }
	})
	c.index(bk, bk.byWorkflow, func(k []byte) (string, func(*journal.Step) bool) {
		w, key, ok := parseWorkflowIndexKey(k)
		return key, func(s *journal.Step) bool { return ok && w != "" && s.Workflow == w }
	})
	c.index(bk, bk.byVerify, func(k []byte) (string, func(*journal.Step) bool) {
		if len(k) < 8 {
			return "", nil
		}
		return string(k[8:]), func(s *journal.Step) bool {
			return !s.VerifyBy.IsZero() && string(timeBytes(s.VerifyBy)) == string(k[:8])
		}
	})
	c.quotaIndexes(bk)
}

// quotaIndexes checks the indexes of budgets and expiring holds, when the
// file has them.
func (c *checker) quotaIndexes(bk *buckets) {
	if bk.byBudget != nil {
		c.index(bk, bk.byBudget, func(k []byte) (string, func(*journal.Step) bool) {
			scope, api, route, created, key, ok := parseBudgetIndexKey(k)
			if !ok {
				return "", nil
			}
			return key, func(s *journal.Step) bool {
				return s.Budgeted && s.CredentialMAC == scope && s.API == api && s.Route == route &&
					string(timeBytes(s.CreatedAt)) == string(created)
			}
		})
	}
	if bk.byExpiry != nil {
		c.index(bk, bk.byExpiry, func(k []byte) (string, func(*journal.Step) bool) {
			if len(k) < 9 {
				return "", nil
			}
			return string(k[8:]), func(s *journal.Step) bool {
				return s.Expirable() && string(timeBytes(s.UpdatedAt)) == string(k[:8])
			}
		})
	}
}

// index checks one index; split parses an entry into its step key and a
// test of the step.
func (c *checker) index(bk *buckets, idx *bbolt.Bucket, split func(k []byte) (string, func(*journal.Step) bool)) {
	name := bucketName(bk, idx)
	cur := idx.Cursor()
	for k, _ := cur.First(); k != nil; k, _ = cur.Next() {
		if len(k) < 2 {
			c.addf("index %s: malformed entry %x", name, k)
			continue
		}
		key, ok := split(k)
		if ok == nil || key == "" {
			c.addf("index %s: malformed entry %x", name, k)
			continue
		}
		s, err := bk.getStep(key)
		switch {
		case err != nil:
			c.addf("step %s: entry %x in index %s: %w", key, k, name, err)
		case !ok(s):
			c.addf("step %s: stale entry %x in index %s", key, k, name)
		}
	}
}

// counters compares the meta counters with the steps counted by steps.
func (c *checker) counters(bk *buckets) {
	for s := journal.Status(0); s <= journal.StatusFailed+1; s++ {
		if got := getUint(bk.meta, countKey(keyCountStatus, byte(s))); got != c.byStatus[s] {
			c.addf("meta: counter of %v is %d, the journal has %d", s, got, c.byStatus[s])
		}
	}
	for h := journal.HoldNone; h <= journal.HoldNeedsReview+1; h++ {
		if got := getUint(bk.meta, countKey(keyCountHold, byte(h))); got != c.byHold[h] {
			c.addf("meta: counter of hold %q is %d, the journal has %d", h, got, c.byHold[h])
		}
	}
	if bk.holdCounts == nil {
		return
	}
	_ = bk.holdCounts.ForEach(func(k, _ []byte) error {
		if len(k) == 0 || k[0] != 'h' {
			c.addf("%s: malformed key %x", bucketHoldCounts, k)
		} else if _, ok := c.heldBy[string(k[1:])]; !ok {
			c.addf("%s: caller %q has a count but no held step", bucketHoldCounts, k[1:])
		}
		return nil
	})
	for scope, n := range c.heldBy {
		if got := getUint(bk.holdCounts, holdCountKey(scope)); got != n {
			c.addf("%s: caller %q has %d held steps, its count says %d", bucketHoldCounts, scope, n, got)
		}
	}
}

// events checks that seqs strictly increase and match their keys.
func (c *checker) events(bk *buckets) {
	last, top := uint64(0), bk.events.Sequence()
	cur := bk.events.Cursor()
	for k, v := cur.First(); k != nil; k, v = cur.Next() {
		if len(k) != 8 {
			c.addf("event %x: malformed seq key", k)
			continue
		}
		seq := binary.BigEndian.Uint64(k)
		var e journal.Event
		if err := json.Unmarshal(v, &e); err != nil {
			c.addf("event %d: decode: %w", seq, err)
			continue
		}
		switch {
		case e.Seq != seq:
			c.addf("event %d: record says seq %d", seq, e.Seq)
		case seq <= last:
			c.addf("event %d: seq does not increase (previous %d)", seq, last)
		case seq > top:
			c.addf("event %d: seq is above the events sequence %d", seq, top)
		case e.Key == "":
			c.addf("event %d: no key", seq)
		}
		last = seq
	}
}

func bucketName(bk *buckets, b *bbolt.Bucket) string {
	switch b {
	case bk.byStatus:
		return string(bucketByStatus)
	case bk.byHold:
		return string(bucketByHold)
	case bk.byWorkflow:
		return string(bucketByWorkflow)
	case bk.byVerify:
		return string(bucketByVerify)
	case bk.byBudget:
		return string(bucketByBudget)
	case bk.byExpiry:
		return string(bucketByExpiry)
	}
	return "?"
}

// workflows checks that every workflow record decodes and that its step
// counts, kept incrementally, match its steps.
func (c *checker) workflows(bk *buckets) {
	bk.workflows.ForEach(func(k, v []byte) error {
		w, err := decodeWorkflow(v, string(k))
		if err != nil {
			c.addf("workflow %s: %v", k, err)
			return nil
		}
		if !bytes.Equal(k, workflowKey(w.Scope, w.ID)) {
			c.addf("workflow %q: stored under the key of another scope or id", k)
		}
		steps, err := bk.workflowSteps(w.Scope, w.ID)
		if err != nil {
			c.addf("workflow %s: %v", k, err)
			return nil
		}
		var want journal.WorkflowCounts
		for i := range steps {
			want.Add(&steps[i], 1)
		}
		if want != w.Counts || len(steps) != w.Steps {
			c.addf("workflow %s: counts %+v over %d steps, its steps give %+v over %d", k, w.Counts, w.Steps, want, len(steps))
		}
		return nil
	})
}
