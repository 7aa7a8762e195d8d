package tlsca

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// WriteFile replaces a file whole, with the mode asked for, and leaves no
// temporary file behind.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "secret")
	for _, content := range []string{"first", "second"} {
		if err := WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		fi, _ := os.Stat(path)
		if err != nil || string(b) != content || fi.Mode().Perm() != 0o600 {
			t.Fatalf("after writing %q: %q, mode %v, %v", content, b, fi.Mode(), err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the directory holds %d files, want 1", len(entries))
	}
	if err := WriteFile(filepath.Join(dir, "missing", "secret"), []byte("x"), 0o600); err == nil {
		t.Error("WriteFile into a missing directory succeeded")
	}
}

// CreateFile never replaces a file: of concurrent creators exactly one
// succeeds, the others get fs.ErrExist, and the file holds the winner's
// bytes.
func TestCreateFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "token")
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = CreateFile(path, []byte{byte('a' + i)}, 0o600) })
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner < 0:
			winner = i
		case err == nil:
			t.Fatalf("creators %d and %d both succeeded", winner, i)
		case !errors.Is(err, fs.ErrExist):
			t.Fatalf("creator %d: %v, want fs.ErrExist", i, err)
		}
	}
	b, _ := os.ReadFile(path)
	fi, _ := os.Stat(path)
	if winner < 0 || string(b) != string(rune('a'+winner)) || fi.Mode().Perm() != 0o600 {
		t.Fatalf("winner %d, file %q mode %v", winner, b, fi.Mode())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the directory holds %d files, want 1 (temporary files removed)", len(entries))
	}
}
