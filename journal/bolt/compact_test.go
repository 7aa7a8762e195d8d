package bolt

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
)

func TestCompactKeepsEverything(t *testing.T) {
	path := tempPath(t)
	b, err := Open(path, Options{Now: testClock()})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2000 {
		mustApply(t, b, keyN(i), start(keyN(i), "wf"))
		mustApply(t, b, keyN(i), transition(journal.StatusCommitted, journal.HoldNone, false))
	}
	// Free many pages, as retention does.
	for {
		_, more, err := b.Sweep(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), 500)
		if err != nil {
			t.Fatal(err)
		}
		if !more {
			break
		}
	}
	mustApply(t, b, "kept", start("kept", "wf"))
	epoch, seq := b.Epoch(), mustLastSeq(t, b)
	b.Close()
	before, after, err := Compact(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if after >= before {
		t.Errorf("compacted from %d to %d bytes, want smaller", before, after)
	}
	b = mustOpenPath(t, path, Options{})
	if b.Epoch() != epoch+1 {
		t.Errorf("epoch after compaction = %d, want %d (the counter is kept)", b.Epoch(), epoch+1)
	}
	if got := mustLastSeq(t, b); got != seq {
		t.Errorf("last event seq = %d, want %d", got, seq)
	}
	if st, err := b.Get("kept"); err != nil || st.Status != journal.StatusStarted {
		t.Errorf("kept step: %+v %v", st, err)
	}
	// Record numbers go on from where they were: a new step does not take
	// the record of a kept one (Check, at cleanup, would see it).
	mustApply(t, b, "new", start("new", "wf"))
	if st, err := b.Get("kept"); err != nil || st.Key != "kept" {
		t.Errorf("kept step after a new write: %+v %v", st, err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".compact")); !os.IsNotExist(err) {
		t.Error("the temporary copy was left behind")
	}
}

func TestCompactRefusesALockedJournal(t *testing.T) {
	path := tempPath(t)
	b := mustOpenPath(t, path, Options{})
	mustApply(t, b, "k", start("k", ""))
	if _, _, err := Compact(path, 100*time.Millisecond); err == nil {
		t.Fatal("compacted a journal that another writer holds")
	}
}

// TestCompactMissingFile: compacting a path with no journal creates
// nothing and says so.
func TestCompactMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing.db")
	if _, _, err := Compact(path, 0); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("compact a missing file: %v, want fs.ErrNotExist", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("compact created %s: %v", path, err)
	}
}

func mustLastSeq(t *testing.T, b *Journal) uint64 {
	t.Helper()
	n, err := b.LastSeq()
	if err != nil {
		t.Fatal(err)
	}
	return n
}
