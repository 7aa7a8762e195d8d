package bolt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
)

// Many goroutines apply to one shared key and to their own keys at once.
// Every Apply must be applied exactly once and in some sequential order:
// the shared key's Attempt counter ends at exactly the number of calls, and
// every caller saw a distinct value of it.
func TestGroupCommitConcurrent(t *testing.T) {
	workers, perWorker := 64, 20
	if testing.Short() {
		perWorker = 4
	}
	b := mustOpen(t)
	var mu sync.Mutex
	var shared []int
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			own := fmt.Sprintf("own-%02d", w)
			for j := range perWorker {
				if j%2 == 0 {
					s := mustApply(t, b, "shared", start("shared", "wf"))
					mu.Lock()
					shared = append(shared, s.Attempt)
					mu.Unlock()
					continue
				}
				s := mustApply(t, b, own, start(own, ""))
				if want := j/2 + 1; s.Attempt != want {
					t.Errorf("%s: attempt %d, want %d", own, s.Attempt, want)
				}
			}
		})
	}
	wg.Wait()

	total := workers * perWorker
	slices.Sort(shared)
	for i, a := range shared {
		if a != i+1 {
			t.Fatalf("shared attempts seen by callers are not 1..%d: %v", len(shared), shared)
		}
	}
	s, err := b.Get("shared")
	if err != nil || s.Attempt != len(shared) {
		t.Errorf("shared: attempt %d, %v; want %d", s.Attempt, err, len(shared))
	}
	events, err := b.Events(0, total+1)
	if err != nil || len(events) != total {
		t.Fatalf("%d events, %v; want %d", len(events), err, total)
	}
	// Every Apply claimed: fences are handed out in commit order, so the
	// n-th event carries fence n.
	for i, e := range events {
		if e.Seq != uint64(i+1) || e.Fence != uint64(i+1) {
			t.Fatalf("event %d: seq %d fence %d", i, e.Seq, e.Fence)
		}
	}
	commits := b.Commits()
	t.Logf("%d applies in %d commits (%.1f per commit)", total, commits, float64(total)/float64(commits))
	if commits >= uint64(total) {
		t.Errorf("%d commits for %d concurrent applies: no group commit happened", commits, total)
	}
}

// blockCommitter makes the committer busy with a mutation that waits; Applies
// made meanwhile queue up for the next batch. The blocking mutation writes
// nothing.
func blockCommitter(t *testing.T, b *Journal) (release func()) {
	entered, unblock, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		b.Apply(context.Background(), "gate", func(*journal.Step) (journal.Change, error) {
			close(entered)
			<-unblock
			return journal.Change{}, journal.ErrNoChange
		})
	}()
	<-entered
	return func() { close(unblock); <-done }
}

// waitQueued waits until n requests are queued.
func waitQueued(t *testing.T, b *Journal, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		b.mu.Lock()
		got := len(b.queue)
		b.mu.Unlock()
		if got >= n {
			return
		}
	}
	t.Fatalf("%d requests never queued", n)
}

type result struct {
	step journal.Step
	err  error
	pan  any
}

// applyQueued starts one Apply per mutation, in order, each queued before
// the next starts, and returns a function that waits for their results.
func applyQueued(t *testing.T, b *Journal, keys []string, ms []journal.Mutation) func() []result {
	res := make([]result, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Go(func() {
			defer func() { res[i].pan = recover() }()
			res[i].step, res[i].err = b.Apply(context.Background(), keys[i], m)
		})
		waitQueued(t, b, i+1)
	}
	return func() []result { wg.Wait(); return res }
}

func TestGroupCommitIsolatesFailures(t *testing.T) {
	b := mustOpen(t)
	errBoom := errors.New("boom")
	release := blockCommitter(t, b)
	commits := b.Commits()
	wait := applyQueued(t, b,
		[]string{"x", "x", "x", "z", "w", "y"},
		[]journal.Mutation{
			start("x", ""),
			func(cur *journal.Step) (journal.Change, error) { cur.Attempt = 100; return journal.Change{}, errBoom },
			start("x", ""),
			put(journal.Step{Key: "not-z", Status: journal.StatusStarted}),
			func(*journal.Step) (journal.Change, error) { panic("kaboom") },
			start("y", ""),
		})
	release()
	res := wait()

	if got := b.Commits() - commits; got != 1 {
		t.Errorf("%d commits, want 1 batch", got)
	}
	if res[0].err != nil || res[0].step.Attempt != 1 {
		t.Errorf("first x: %+v", res[0])
	}
	if res[1].err != errBoom {
		t.Errorf("failing x: err = %v, want errBoom", res[1].err)
	}
	if res[2].err != nil || res[2].step.Attempt != 2 {
		t.Errorf("second x: attempt %d, %v; want 2 (sees the first, not the failed one)", res[2].step.Attempt, res[2].err)
	}
	if !errors.Is(res[3].err, journal.ErrInvalidChange) {
		t.Errorf("invalid z: err = %v, want ErrInvalidChange", res[3].err)
	}
	if res[4].pan == nil || !strings.Contains(fmt.Sprint(res[4].pan), "kaboom") {
		t.Errorf("panicking w: recovered %v, want the panic in the caller", res[4].pan)
	}
	if res[5].err != nil || res[5].step.Fence != 3 {
		t.Errorf("y: %+v, want fence 3", res[5])
	}
	for _, k := range []string{"z", "not-z", "w", "gate"} {
		if _, err := b.Get(k); !errors.Is(err, journal.ErrNotFound) {
			t.Errorf("get %s: %v, want ErrNotFound", k, err)
		}
	}
	if n, _ := b.LastSeq(); n != 3 {
		t.Errorf("%d events, want 3", n)
	}
}

// A batch the log cannot take fails every Apply of it, writes nothing and
// runs no mutation twice; the writes logged before it stay.
func TestGroupCommitFailure(t *testing.T) {
	b := mustOpen(t)
	mustApply(t, b, "before", start("before", ""))
	release := blockCommitter(t, b)
	var mu sync.Mutex
	calls := map[string]int{}
	counted := func(key string, m journal.Mutation) journal.Mutation {
		return func(cur *journal.Step) (journal.Change, error) {
			mu.Lock()
			calls[key]++
			mu.Unlock()
			return m(cur)
		}
	}
	big := journal.Step{Key: "big", Status: journal.StatusFailed, LastError: strings.Repeat("x", 4<<20)}
	wait := applyQueued(t, b, []string{"a", "big", "before"},
		[]journal.Mutation{counted("a", start("a", "")), counted("big", put(big)), counted("before", start("before", ""))})
	// The log cannot be written: its file is closed under it.
	f := b.lg.log.f
	closed, err := os.Open(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	b.lg.log.f = closed
	commits := b.Commits()
	release()
	res := wait()
	b.lg.log.f = f

	for i, r := range res {
		if !errors.Is(r.err, os.ErrClosed) || !errors.Is(r.err, journal.ErrUnavailable) {
			t.Errorf("apply %d: err = %v, want the log's error, as ErrUnavailable", i, r.err)
		}
	}
	if want := map[string]int{"a": 1, "big": 1, "before": 1}; fmt.Sprint(calls) != fmt.Sprint(want) {
		t.Errorf("mutation calls = %v, want %v", calls, want)
	}
	if b.Commits() != commits {
		t.Errorf("commit counted although it failed")
	}
	for _, k := range []string{"a", "big"} {
		if _, err := b.Get(k); !errors.Is(err, journal.ErrNotFound) {
			t.Errorf("get %s: %v, want ErrNotFound", k, err)
		}
	}
	if s, _ := b.Get("before"); s.Attempt != 1 {
		t.Errorf("before: attempt %d, want 1", s.Attempt)
	}
	// The journal goes on working.
	if s := mustApply(t, b, "before", start("before", "")); s.Attempt != 2 || s.Fence != 2 {
		t.Errorf("after the failure: attempt %d fence %d, want 2 2", s.Attempt, s.Fence)
	}
}

// Close waits for queued Applies; each Apply either committed (and is in
// the file) or failed with ErrClosed.
func TestCloseDuringApplies(t *testing.T) {
	path := tempPath(t)
	b, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var ok sync.Map
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for j := 0; ; j++ {
				key := fmt.Sprintf("w%02d-%04d", w, j)
				_, err := b.Apply(context.Background(), key, start(key, ""))
				if errors.Is(err, journal.ErrClosed) {
					return
				}
				if err != nil {
					t.Errorf("apply %s: %v", key, err)
					return
				}
				ok.Store(key, true)
			}
		})
	}
	time.Sleep(50 * time.Millisecond)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()

	b = mustOpenPath(t, path, Options{ReadOnly: true})
	n := 0
	ok.Range(func(k, _ any) bool {
		n++
		if _, err := b.Get(k.(string)); err != nil {
			t.Errorf("acknowledged %s: %v", k, err)
		}
		return true
	})
	if seq, _ := b.LastSeq(); seq != uint64(n) {
		t.Errorf("%d events, %d acknowledged applies", seq, n)
	}
}
