package tlsca

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/toolguard/toolguard/internal/durable"
)

// WriteFile writes data to path with mode perm, replacing any file there:
// a temporary file in the same directory is written and fsynced, renamed
// over path, and the directory is fsynced, so a crash leaves either the old
// file or the new one.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return placeFile(path, data, perm, os.Rename)
}

// CreateFile creates path with data and mode perm, failing with an error
// wrapping fs.ErrExist when it exists: a temporary file in the same
// directory is written and fsynced, then hard-linked to path (link never
// replaces a file), and the directory is fsynced. Of processes creating
// one file at once, exactly one succeeds, and no one sees it partly
// written.
func CreateFile(path string, data []byte, perm os.FileMode) error {
	return placeFile(path, data, perm, os.Link)
}

// placeFile writes data with mode perm to a fsynced temporary file beside
// path, puts it at path with place (rename: replace; link: create only),
// and fsyncs the directory.
func placeFile(path string, data []byte, perm os.FileMode, place func(tmp, path string) error) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("create temp file for %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after a successful rename
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return fmt.Errorf("chmod %s: %w", tmp, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := place(tmp, path); err != nil {
		return fmt.Errorf("place %s: %w", path, err)
	}
	return durable.SyncDir(dir)
}
