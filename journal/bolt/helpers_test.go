package bolt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
)

// tempPath returns a journal path in a fresh directory that is removed
// after the test, unless the test failed: then the path is logged and kept.
func tempPath(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "toolguard-journal-")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "journal.db")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("journal kept for inspection: %s", path)
			return
		}
		os.RemoveAll(dir)
	})
	return path
}

// mustOpen opens a new journal with a test clock. Its cleanup closes it and
// runs Check on the file.
func mustOpen(t testing.TB) *Journal {
	t.Helper()
	return mustOpenPath(t, tempPath(t), Options{Now: testClock()})
}

// mustOpenPath opens path with opts; its cleanup closes the journal and
// runs Check on the file, failing the test with every problem.
func mustOpenPath(t testing.TB, path string, opts Options) *Journal {
	t.Helper()
	b, err := Open(path, opts)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	b.anyTransition = !opts.ReadOnly
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("close %s: %v", path, err)
		}
		checkFile(t, path)
	})
	return b
}

// checkFile opens path read-only and fails the test with Check's problems.
func checkFile(t testing.TB, path string) {
	t.Helper()
	ro, err := Open(path, Options{ReadOnly: true, Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Errorf("check %s: %v", path, err)
		return
	}
	defer ro.Close()
	if errs := ro.Check(); len(errs) > 0 {
		t.Errorf("check %s: %d problems:\n%v", path, len(errs), errors.Join(errs...))
	}
}

// testClock returns a clock that starts at a fixed time and advances 1ms
// per call.
func testClock() func() time.Time {
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var n atomic.Int64
	return func() time.Time { return base.Add(time.Duration(n.Add(1)) * time.Millisecond) }
}

// put is a mutation that writes s as it is (keeping CreatedAt and claims as
// Apply decides).
func put(s journal.Step) journal.Mutation {
	return func(*journal.Step) (journal.Change, error) { return journal.Change{Step: s}, nil }
}

// transition is a mutation that changes the status (and hold) of an
// existing step, optionally claiming it.
func transition(to journal.Status, hold journal.Hold, claim bool) journal.Mutation {
	return func(cur *journal.Step) (journal.Change, error) {
		if cur == nil {
			return journal.Change{}, journal.ErrNotFound
		}
		cur.Status, cur.Hold = to, hold
		if to == journal.StatusCommitted || to == journal.StatusVerified {
			cur.Response = &journal.Response{Status: 200, Body: []byte(`{}`)}
		}
		return journal.Change{Step: *cur, Claim: claim}, nil
	}
}

// start creates or restarts key as started, claimed, with Attempt+1.
func start(key, workflow string) journal.Mutation {
	return func(cur *journal.Step) (journal.Change, error) {
		s := journal.Step{Key: key, API: "payments", Route: "create_invoice", Workflow: workflow}
		if cur != nil {
			s = *cur
		}
		s.Status = journal.StatusStarted
		s.Attempt++
		return journal.Change{Step: s, Event: "started", Claim: true}, nil
	}
}

func mustApply(t testing.TB, b *Journal, key string, m journal.Mutation) journal.Step {
	t.Helper()
	s, err := b.Apply(context.Background(), key, m)
	if err != nil {
		t.Fatalf("apply %s: %v", key, err)
	}
	return s
}

func keyN(i int) string { return fmt.Sprintf("k%06d", i) }

func stepKeys(steps []journal.Step) string {
	keys := make([]string, len(steps))
	for i, s := range steps {
		keys[i] = s.Key
	}
	return strings.Join(keys, ",")
}
