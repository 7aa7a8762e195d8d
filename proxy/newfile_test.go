package proxy

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// WriteFileNew creates a file once, with its mode, and never replaces one:
// the second writer gets fs.ErrExist and the first writer's content stays.
// No temporary file is left behind.
func TestWriteFileNew(t *testing.T) {
	path := filepath.Join(t.TempDir(), "admin-token")
	if err := WriteFileNew(path, []byte("first\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileNew(path, []byte("second\n"), 0o600); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second write: %v, want fs.ErrExist", err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "first\n" {
		t.Fatalf("content %q, %v; want the first writer's", b, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v; want 0600", fi.Mode(), err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("directory holds %d files, want only the one written", len(entries))
	}
}
