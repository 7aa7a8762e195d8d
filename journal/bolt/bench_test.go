package bolt

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/toolguard/toolguard/journal"
)

// BenchmarkApply measures Apply (one new started step per op, claimed) with
// a fixed number of concurrent callers. It runs its own goroutines instead
// of RunParallel, whose goroutine count is a multiple of GOMAXPROCS, so
// that conc=1 really is one caller. Reported: ns/op (wall time per Apply
// across all callers), commits/op (fsyncs per Apply) and applies/commit.
//
//	go test -run '^$' -bench BenchmarkApply -benchtime 3s ./journal/bolt/
func BenchmarkApply(b *testing.B) {
	for _, conc := range []int{1, 16, 64} {
		b.Run("conc="+strconv.Itoa(conc), func(b *testing.B) {
			j := mustOpenPath(b, tempPath(b), Options{})
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for range conc {
				wg.Go(func() {
					for {
						i := next.Add(1)
						if i > int64(b.N) {
							return
						}
						key := "k" + strconv.FormatInt(i, 10)
						if _, err := j.Apply(context.Background(), key, start(key, "bench")); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			commits := float64(j.Commits())
			b.ReportMetric(commits/float64(b.N), "commits/op")
			b.ReportMetric(float64(b.N)/commits, "applies/commit")
		})
	}
}

// largeSteps is the size of the journal BenchmarkOpenLarge builds.
const largeSteps = 1_000_000

var largeOnce struct {
	sync.Once
	path string
	err  error
}

// largeJournal builds (once per process) a journal of largeSteps steps:
// 1% on hold needs_review, 1% awaiting approval, the rest committed with a
// small stored response, one event each, in 20 workflows. It writes in big
// transactions through the same code as Apply (prepare and write), not
// through Apply, to keep the build short. The file is removed afterwards,
// unless TOOLGUARD_SCALE_PATH names where to keep it (and reuse it on the
// next run).
func largeJournal(b *testing.B) string {
	if os.Getenv("TOOLGUARD_SCALE") != "1" {
		b.Skip("set TOOLGUARD_SCALE=1 to build a journal of 1,000,000 steps")
	}
	largeOnce.Do(func() {
		largeOnce.path = os.Getenv("TOOLGUARD_SCALE_PATH")
		if largeOnce.path == "" {
			dir, err := os.MkdirTemp("", "toolguard-journal-large-")
			if err != nil {
				largeOnce.err = err
				return
			}
			largeOnce.path = dir + "/journal.db"
			b.Cleanup(func() { os.RemoveAll(dir) })
		} else if _, err := os.Stat(largeOnce.path); err == nil {
			return
		}
		start := time.Now()
		largeOnce.err = bulkLoad(largeOnce.path, largeSteps)
		fi, _ := os.Stat(largeOnce.path)
		b.Logf("built %d steps in %v: %s, %d MB", largeSteps, time.Since(start).Round(time.Millisecond),
			largeOnce.path, fi.Size()>>20)
	})
	if largeOnce.err != nil {
		b.Fatal(largeOnce.err)
	}
	return largeOnce.path
}

// bulkLoad writes n steps to a new journal at path in big transactions,
// then compacts it: big transactions free so many pages that every later
// commit would write a freelist of megabytes, which a journal built by
// Apply never has.
func bulkLoad(path string, n int) error {
	tmp := path + ".build"
	defer os.Remove(tmp)
	j, err := Open(tmp, Options{})
	if err != nil {
		return err
	}
	defer j.Close()
	const perTx = 50_000
	for lo := 0; lo < n; lo += perTx {
		err := j.db.Update(func(tx *bbolt.Tx) error {
			bk, err := openBuckets(tx)
			if err != nil {
				return err
			}
			for i := lo; i < min(lo+perTx, n); i++ {
				if err := bulkStep(j, bk, i); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("bulk load at %d: %w", lo, err)
		}
	}
	dst, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		return err
	}
	if err := bbolt.Compact(dst, j.db, 64<<20); err != nil {
		dst.Close()
		return fmt.Errorf("compact: %w", err)
	}
	return dst.Close()
}

func bulkStep(j *Journal, bk *buckets, i int) error {
	sum := sha256.Sum256([]byte(strconv.Itoa(i)))
	key := hex.EncodeToString(sum[:])
	s := journal.Step{Key: key, API: "payments", Route: "create_invoice", Workflow: "wf-" + strconv.Itoa(i%20),
		Status: journal.StatusCommitted, Attempt: 1, Method: "POST", Host: "payments.example.com", Path: "/v1/invoices",
		BodyHash: key, OperationID: "in_" + strconv.Itoa(i),
		Response: &journal.Response{Status: 200, Body: []byte(`{"id":"in_` + strconv.Itoa(i) + `","status":"open"}`), BodyHash: key}}
	switch i % 100 {
	case 0:
		s.Status, s.Hold, s.HoldReason, s.Response = journal.StatusStarted, journal.HoldNeedsReview, "outcome unknown", nil
	case 1:
		s.Status, s.Hold, s.Response = journal.StatusPrepared, journal.HoldAwaitingApproval, nil
	}
	p, err := j.prepare(bk, key, nil, journal.Change{Step: s, Claim: true})
	if err != nil {
		return err
	}
	return p.write(bk)
}

// BenchmarkOpenLarge times Open and the operator queries on a journal of
// 1,000,000 steps. The build takes minutes and about 1 GB of disk, so it
// runs only with TOOLGUARD_SCALE=1:
//
//	TOOLGUARD_SCALE=1 go test -run '^$' -bench BenchmarkOpenLarge -benchtime 20x -timeout 1h ./journal/bolt/
func BenchmarkOpenLarge(b *testing.B) {
	path := largeJournal(b)
	b.Run("open", func(b *testing.B) {
		for b.Loop() {
			j, err := Open(path, Options{})
			if err != nil {
				b.Fatal(err)
			}
			j.Close()
		}
	})
	b.Run("open_read_only", func(b *testing.B) {
		for b.Loop() {
			j, err := Open(path, Options{ReadOnly: true})
			if err != nil {
				b.Fatal(err)
			}
			j.Close()
		}
	})
	j, err := Open(path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	for _, q := range []struct {
		name string
		f    journal.Filter
		want int
	}{
		{"list_needs_review", journal.Filter{Hold: journal.HoldNeedsReview}, 1000},
		{"list_needs_review_all", journal.Filter{Hold: journal.HoldNeedsReview, Limit: largeSteps}, largeSteps / 100},
		{"list_newest", journal.Filter{}, 1000},
		{"list_workflow_limit_100", journal.Filter{Workflow: "wf-7", Limit: 100}, 100},
	} {
		b.Run(q.name, func(b *testing.B) {
			for b.Loop() {
				steps, err := j.List(q.f)
				if err != nil || len(steps) != q.want {
					b.Fatalf("%d steps, %v; want %d", len(steps), err, q.want)
				}
			}
		})
	}
	b.Run("count", func(b *testing.B) {
		for b.Loop() {
			if _, err := j.Count(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("apply", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			key := "new-" + strconv.Itoa(i)
			if _, err := j.Apply(context.Background(), key, start(key, "")); err != nil {
				b.Fatal(err)
			}
		}
	})
}
