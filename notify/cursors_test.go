package notify_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/notify"
	"github.com/toolguard/toolguard/notify/cursortest"
)

func TestFileCursors(t *testing.T) {
	cursortest.Run(t, func(t *testing.T) notify.Cursors {
		return notify.NewFileCursors(filepath.Join(t.TempDir(), "toolguard.db.notify"))
	})
}

// TestFileCursorsDurable: what a Store wrote is what the next process
// reads, and a file that cannot be read is an error, not a fresh start.
func TestFileCursorsDurable(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "toolguard.db.notify")
	c := notify.NewFileCursors(path)
	if stored, err := c.Store(ctx, "webhook-1", 0, 42); !stored || err != nil {
		t.Fatalf("Store = %v, %v", stored, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("cursor file: %v, %v; want mode 0600", fi, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("the directory holds %d files, want the cursor file only (no temporary left)", len(entries))
	}
	if seq, ok, err := notify.NewFileCursors(path).Load(ctx, "webhook-1"); seq != 42 || !ok || err != nil {
		t.Errorf("Load after reopening = %d, %v, %v; want 42, true", seq, ok, err)
	}
	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := notify.NewFileCursors(path).Load(ctx, "webhook-1")
	if err == nil || !strings.Contains(err.Error(), "remove the file") {
		t.Errorf("Load of a damaged file = %v, want an error with a hint", err)
	}
}
