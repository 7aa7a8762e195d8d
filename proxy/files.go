package proxy

import (
	"fmt"
	"os"
	"path/filepath"
)

// writeFileAtomic writes data to path with mode perm: a temporary file in the
// same directory is written and fsynced, renamed over path, and the directory
// is fsynced, so a crash leaves either the old file or the new one.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	return placeFile(path, data, perm, os.Rename)
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
	return syncDir(dir)
}

// syncDir fsyncs a directory, so that a file created or renamed in it
// survives a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}

// LoadOrCreateSecret returns the per-install HMAC secret kept at path,
// creating 32 random bytes with mode 0600 on first use. The secret keys the
// credential part of every idempotency key, so it must survive restarts and
// never leave the machine.
func LoadOrCreateSecret(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		if len(b) < 32 {
			return nil, fmt.Errorf("read secret %s: %d bytes, want at least 32", path, len(b))
		}
		return b, nil
	}
	if !os.IsNotExist(err) {
		return nil, fmt.Errorf("read secret %s: %w", path, err)
	}
	b = make([]byte, 32)
	if _, err := randRead(b); err != nil {
		return nil, fmt.Errorf("generate secret: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create secret dir: %w", err)
	}
	if err := writeFileAtomic(path, b, 0o600); err != nil {
		return nil, err
	}
	return b, nil
}
