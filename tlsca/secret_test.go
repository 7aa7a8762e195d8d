package tlsca

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// The secret is made once (32 bytes, mode 0600, its directory created)
// and read afterwards; a short one is refused, never replaced.
func TestLoadOrCreateSecret(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "toolguard.db.secret")
	first, err := LoadOrCreateSecret(path)
	if err != nil || len(first) != 32 {
		t.Fatalf("first: %d bytes, %v", len(first), err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("secret file: %v, %v; want mode 0600", fi.Mode(), err)
	}
	again, err := LoadOrCreateSecret(path)
	if err != nil || !bytes.Equal(again, first) {
		t.Fatalf("second: %v; want the same secret", err)
	}
	os.WriteFile(path, []byte("short"), 0o600)
	if _, err := LoadOrCreateSecret(path); !errors.Is(err, ErrShortSecret) {
		t.Errorf("short secret: %v, want ErrShortSecret", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "short" {
		t.Error("the short secret was replaced")
	}
	if _, err := LoadOrCreateSecret(t.TempDir()); err == nil {
		t.Error("a directory as the secret file was accepted")
	}
}
