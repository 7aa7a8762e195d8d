package bolt

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/bbolt"
)

// Compact rewrites the journal at path into a fresh file, dropping the
// free pages that sweeps leave behind (bbolt never shrinks a file, and a
// long freelist is rewritten on every commit). The journal must not be
// open elsewhere: Compact takes the file lock and waits at most timeout.
// The copy is written beside path, fsynced and checked before it replaces
// path; on any error path is left as it was. It returns the sizes before
// and after.
func Compact(path string, timeout time.Duration) (before, after int64, err error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	fi, err := os.Stat(path)
	if err != nil {
		return 0, 0, fmt.Errorf("compact journal: %w", err)
	}
	if err := upgradeFile(path, timeout); err != nil {
		return 0, 0, fmt.Errorf("compact journal: %w", err)
	}
	// Writable, so that the lock excludes a running toolguard.
	src, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: timeout})
	if err != nil {
		return 0, 0, fmt.Errorf("compact journal %s: %w (is toolguard still running?)", path, err)
	}
	defer src.Close()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".compact")
	os.Remove(tmp)
	defer os.Remove(tmp) // a no-op after the rename
	dst, err := bbolt.Open(tmp, 0o600, &bbolt.Options{Timeout: timeout, FreelistType: bbolt.FreelistMapType})
	if err != nil {
		return 0, 0, fmt.Errorf("compact journal: create %s: %w", tmp, err)
	}
	if err := bbolt.Compact(dst, src, 64<<20); err != nil {
		dst.Close()
		return 0, 0, fmt.Errorf("compact journal %s: %w", path, err)
	}
	if err := dst.Close(); err != nil {
		return 0, 0, fmt.Errorf("compact journal: close %s: %w", tmp, err)
	}
	if err := checkCopy(tmp); err != nil {
		return 0, 0, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return 0, 0, fmt.Errorf("compact journal: replace %s: %w", path, err)
	}
	nfi, err := os.Stat(path)
	if err != nil {
		return 0, 0, fmt.Errorf("compact journal: %w", err)
	}
	return fi.Size(), nfi.Size(), nil
}

// checkCopy opens a compacted copy and runs Check on it.
func checkCopy(path string) error {
	b, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("compact journal: the copy does not open: %w", err)
	}
	defer b.Close()
	if errs := b.Check(); len(errs) > 0 {
		return fmt.Errorf("compact journal: the copy fails its check: %v", errs[0])
	}
	return nil
}

// upgradeFile brings a journal written in an older layout to this build's, so
// that its compacted copy is one this build reads; a current journal is
// left untouched.
func upgradeFile(path string, timeout time.Duration) error {
	ro, err := Open(path, Options{ReadOnly: true, Timeout: timeout})
	if err == nil {
		return ro.Close()
	}
	if !errors.Is(err, ErrNeedsUpgrade) {
		return err
	}
	rw, err := Open(path, Options{Timeout: timeout})
	if err != nil {
		return err
	}
	return rw.Close()
}
