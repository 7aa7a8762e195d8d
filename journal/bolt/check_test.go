package bolt

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/toolguard/toolguard/journal"
)

func TestCheckFindsProblems(t *testing.T) {
	putRecord := func(bk *buckets, key string, v []byte) error {
		_, ref, err := bk.loadStep(key)
		if err != nil {
			return err
		}
		return bk.putStep(key, &ref, v)
	}
	editStep := func(edit func(s *journal.Step)) func(bk *buckets) error {
		return func(bk *buckets) error {
			s, err := bk.getStep("a")
			if err != nil {
				return err
			}
			edit(s)
			v, _ := json.Marshal(s)
			return putRecord(bk, "a", v)
		}
	}
	tests := []struct {
		name    string
		corrupt func(bk *buckets) error
		want    []string
	}{{
		name:    "undecodable step",
		corrupt: func(bk *buckets) error { return putRecord(bk, "a", []byte("{")) },
		want:    []string{"step record 0000000000000001: decode step", "step a: entry"},
	}, {
		name:    "stored under another key",
		corrupt: editStep(func(s *journal.Step) { s.Key = "b" }),
		want:    []string{`step a: stored under the wrong key (record says "b")`},
	}, {
		name:    "committed without response or evidence",
		corrupt: editStep(func(s *journal.Step) { s.Response, s.Evidence = nil, "" }),
		want:    []string{"step a: committed without a response or evidence"},
	}, {
		name:    "fence from the future",
		corrupt: editStep(func(s *journal.Step) { s.Fence = 7 }),
		want:    []string{"step a: fence 7 is above the fence counter 1"},
	}, {
		name:    "epoch from the future",
		corrupt: editStep(func(s *journal.Step) { s.Epoch = 3 }),
		want:    []string{"step a: epoch 3 is above the current epoch 1"},
	}, {
		name:    "missing index entry",
		corrupt: func(bk *buckets) error { return bk.byWorkflow.Delete(workflowIndexKey("wf", "a")) },
		want:    []string{"step a: no entry in index idx_workflow"},
	}, {
		name: "index entry without step",
		corrupt: func(bk *buckets) error {
			return bk.byHold.Put(holdIndexKey(journal.HoldNeedsReview, "ghost"), []byte{})
		},
		want: []string{"step ghost: entry 0267686f7374 in index idx_hold: not found"},
	}, {
		name:    "index entry with the wrong value",
		corrupt: editStep(func(s *journal.Step) { s.Hold = journal.HoldAwaitingApproval }),
		want: []string{
			"step a: no entry in index idx_hold",
			"step a: stale entry 0261 in index idx_hold",
			`meta: counter of hold "needs_review" is 1, the journal has 0`,
		},
	}, {
		name: "counter off",
		corrupt: func(bk *buckets) error {
			return putUint(bk.meta, countKey(keyCountStatus, byte(journal.StatusFailed)), 5)
		},
		want: []string{"meta: counter of failed is 5, the journal has 0"},
	}, {
		name: "event seq mismatch",
		corrupt: func(bk *buckets) error {
			return bk.events.Put(seqKey(1), []byte(`{"seq":9,"key":"a"}`))
		},
		want: []string{"event 1: record says seq 9"},
	}, {
		name: "event beyond the sequence",
		corrupt: func(bk *buckets) error {
			return bk.events.Put(seqKey(9), []byte(`{"seq":9,"key":"a"}`))
		},
		want: []string{"event 9: seq is above the events sequence 1"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Open(tempPath(t), Options{})
			if err != nil {
				t.Fatal(err)
			}
			b.anyTransition = true // seeds states directly
			defer b.Close()
			mustApply(t, b, "a", func(*journal.Step) (journal.Change, error) {
				return journal.Change{Claim: true, Step: journal.Step{Key: "a", Status: journal.StatusCommitted, Hold: journal.HoldNeedsReview,
					Workflow: "wf", Response: &journal.Response{Status: 201}}}, nil
			})
			if errs := b.Check(); errs != nil {
				t.Fatalf("check before corrupting: %v", errs)
			}
			err = b.db.Update(func(tx *bbolt.Tx) error {
				bk, err := openBuckets(tx)
				if err != nil {
					return err
				}
				return tc.corrupt(bk)
			})
			if err != nil {
				t.Fatal(err)
			}
			got := errors.Join(b.Check()...)
			if got == nil {
				t.Fatal("check found nothing")
			}
			for _, w := range tc.want {
				if !strings.Contains(got.Error(), w) {
					t.Errorf("check:\n%v\nwant a problem %q", got, w)
				}
			}
		})
	}
}

func TestCheckMissingBucket(t *testing.T) {
	b, err := Open(tempPath(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.db.Update(func(tx *bbolt.Tx) error { return tx.DeleteBucket(bucketByHold) })
	errs := b.Check()
	if len(errs) != 1 || !errors.Is(errs[0], journal.ErrCorrupt) {
		t.Errorf("check = %v, want one ErrCorrupt", errs)
	}
	if _, err := b.Get("a"); !errors.Is(err, journal.ErrCorrupt) {
		t.Errorf("get = %v, want ErrCorrupt", err)
	}
}
