package bolt_test

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/journal/bolt"
	"github.com/toolguard/toolguard/journal/journaltest"
)

// TestConformance runs the backend conformance suite against bbolt: each
// test gets its own directory, and a name opened again opens the same
// file (a restart, with a new epoch).
func TestConformance(t *testing.T) {
	journaltest.Run(t, func(t *testing.T, opts journaltest.Options) journal.Store {
		path := filepath.Join(dirOf(t), opts.Name+".db")
		j, err := bolt.Open(path, bolt.Options{})
		if err != nil {
			t.Fatalf("open %s: %v", path, err)
		}
		t.Cleanup(func() { j.Close() })
		return j
	})
}

var (
	dirsMu sync.Mutex
	dirs   = map[*testing.T]string{}
)

// dirOf is t's journal directory, the same on every call within t.
func dirOf(t *testing.T) string {
	dirsMu.Lock()
	defer dirsMu.Unlock()
	d, ok := dirs[t]
	if !ok {
		d = t.TempDir()
		dirs[t] = d
		t.Cleanup(func() { dirsMu.Lock(); delete(dirs, t); dirsMu.Unlock() })
	}
	return d
}
