package admin

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestLoadOrCreateToken: the first call creates a 0600 token file, later
// calls (and concurrent first ones) read the same token, and a file others
// can read or an empty one is refused, never replaced.
func TestLoadOrCreateToken(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "admin-token")
	const n = 8
	tokens := make([]string, n)
	created := make([]bool, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var err error
			if tokens[i], created[i], err = LoadOrCreateToken(path); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	creators := 0
	for i := range n {
		if created[i] {
			creators++
		}
		if tokens[i] != tokens[0] {
			t.Fatalf("token %d = %q, token 0 = %q: want one token", i, tokens[i], tokens[0])
		}
	}
	if creators != 1 || !strings.HasPrefix(tokens[0], operatorTokenPrefix) || len(tokens[0]) < 40 {
		t.Fatalf("%d creators, token %q; want 1 creator and a long tgop_ token", creators, tokens[0])
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, %v; want mode 0600", fi.Mode(), err)
	}
	if again, made, err := LoadOrCreateToken(path); err != nil || made || again != tokens[0] {
		t.Fatalf("second start: %q, created %v, %v; want the same token", again, made, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("directory holds %d files, want only the token (temporary files removed)", len(entries))
	}

	os.Chmod(path, 0o644)
	if _, _, err := LoadOrCreateToken(path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("world-readable token file: %v, want an error naming chmod 600", err)
	}
	os.WriteFile(path, []byte("\n"), 0o600)
	os.Chmod(path, 0o600)
	if _, _, err := LoadOrCreateToken(path); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("empty token file: %v, want an error", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "\n" {
		t.Errorf("the empty file was replaced: %q", b)
	}
}
