package bolt

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/toolguard/toolguard/journal"
)

func TestOpenCreatesFile(t *testing.T) {
	path := tempPath(t)
	b := mustOpenPath(t, path, Options{})
	if got, want := b.Epoch(), uint64(1); got != want {
		t.Errorf("epoch = %d, want %d", got, want)
	}
	if b.Path() != path {
		t.Errorf("path = %q, want %q", b.Path(), path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("mode = %v, want 0600", got)
	}
	if b.Size() <= 0 {
		t.Errorf("size = %d, want > 0", b.Size())
	}
}

func TestReopenIncrementsEpochAndKeepsSteps(t *testing.T) {
	path := tempPath(t)
	for want := uint64(1); want <= 3; want++ {
		b, err := Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if b.Epoch() != want {
			t.Errorf("open %d: epoch = %d, want %d", want, b.Epoch(), want)
		}
		s := mustApply(t, b, keyN(int(want)), start(keyN(int(want)), ""))
		if s.Epoch != want {
			t.Errorf("claimed step epoch = %d, want %d", s.Epoch, want)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
	b := mustOpenPath(t, path, Options{})
	steps, err := b.List(journal.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := stepKeys(steps), "k000003,k000002,k000001"; got != want {
		t.Errorf("steps = %s, want %s", got, want)
	}
	// The fence counter survives reopening: fences never repeat.
	s := mustApply(t, b, "x", start("x", ""))
	if s.Epoch != 4 || s.Fence != 4 {
		t.Errorf("claim after reopen = epoch %d fence %d, want 4 4", s.Epoch, s.Fence)
	}
}

func TestOpenLocked(t *testing.T) {
	path := tempPath(t)
	mustOpenPath(t, path, Options{})
	for _, ro := range []bool{false, true} {
		start := time.Now()
		_, err := Open(path, Options{Timeout: 200 * time.Millisecond, ReadOnly: ro})
		if !errors.Is(err, ErrLocked) {
			t.Fatalf("second open (read-only %v): err = %v, want ErrLocked", ro, err)
		}
		if !strings.Contains(err.Error(), path) {
			t.Errorf("error %q does not name the path", err)
		}
		if d := time.Since(start); d < 100*time.Millisecond {
			t.Errorf("gave up after %v, before the timeout", d)
		}
	}
}

func TestReadOnly(t *testing.T) {
	path := tempPath(t)
	b, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	mustApply(t, b, "a", start("a", "wf"))
	b.Close()

	ro := mustOpenPath(t, path, Options{ReadOnly: true})
	if !ro.ReadOnly() {
		t.Error("ReadOnly() = false")
	}
	if ro.Epoch() != 1 {
		t.Errorf("read-only epoch = %d, want 1 (not incremented)", ro.Epoch())
	}
	if _, err := ro.Get("a"); err != nil {
		t.Errorf("get: %v", err)
	}
	called := false
	_, err = ro.Apply(context.Background(), "a", func(*journal.Step) (journal.Change, error) { called = true; return journal.Change{}, nil })
	if !errors.Is(err, journal.ErrReadOnly) || called {
		t.Errorf("apply on read-only: err = %v, mutation called %v; want ErrReadOnly, not called", err, called)
	}
	// Two readers may share the file.
	mustOpenPath(t, path, Options{ReadOnly: true})
}

func TestReadOnlyMissingFile(t *testing.T) {
	path := tempPath(t)
	_, err := Open(path, Options{ReadOnly: true})
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("err = %v, want not exist", err)
	}
}

func TestOpenNewerSchema(t *testing.T) {
	path := tempPath(t)
	b, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = b.db.Update(func(tx *bbolt.Tx) error { return putUint(tx.Bucket(bucketMeta), keySchema, journal.SchemaVersion+1) })
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	for _, ro := range []bool{false, true} {
		_, err := Open(path, Options{ReadOnly: ro})
		if !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), "newer") {
			t.Errorf("open (read-only %v): err = %v, want ErrSchema saying newer", ro, err)
		}
	}
	// The refused writable open must not have bumped the epoch.
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.View(func(tx *bbolt.Tx) error {
		if got := getUint(tx.Bucket(bucketMeta), keyEpoch); got != 1 {
			t.Errorf("epoch after refused open = %d, want 1", got)
		}
		return nil
	})
}

func TestOpenForeignFile(t *testing.T) {
	path := tempPath(t)
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bbolt.Tx) error { _, err := tx.CreateBucket([]byte("other")); return err })
	db.Close()
	if _, err := Open(path, Options{ReadOnly: true}); !errors.Is(err, ErrSchema) {
		t.Errorf("read-only open of a foreign bbolt file: err = %v, want ErrSchema", err)
	}
}

func TestClose(t *testing.T) {
	b := mustOpen(t)
	mustApply(t, b, "a", start("a", ""))
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	if _, err := b.Apply(context.Background(), "a", start("a", "")); !errors.Is(err, journal.ErrClosed) {
		t.Errorf("apply after close: %v, want ErrClosed", err)
	}
	if _, err := b.Get("a"); !errors.Is(err, journal.ErrClosed) {
		t.Errorf("get after close: %v, want ErrClosed", err)
	}
	if _, err := b.List(journal.Filter{}); !errors.Is(err, journal.ErrClosed) {
		t.Errorf("list after close: %v, want ErrClosed", err)
	}
	if b.Size() != 0 {
		t.Errorf("size after close = %d, want 0", b.Size())
	}
}

func TestWriteToBackup(t *testing.T) {
	b := mustOpen(t)
	for i := range 10 {
		mustApply(t, b, keyN(i), start(keyN(i), "wf"))
	}
	var buf bytes.Buffer
	n, err := b.WriteTo(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) {
		t.Errorf("n = %d, wrote %d", n, buf.Len())
	}
	path := tempPath(t)
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	restored := mustOpenPath(t, path, Options{})
	steps, err := restored.List(journal.Filter{Workflow: "wf"})
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 10 {
		t.Errorf("restored %d steps, want 10", len(steps))
	}
	if restored.Epoch() != 2 {
		t.Errorf("restored epoch = %d, want 2", restored.Epoch())
	}
}
