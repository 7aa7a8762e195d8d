package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"

	"github.com/toolguard/toolguard/tlsca"
)

// Cursors keep, by name, the seq of the last journal event a webhook's
// worker handled. *FileCursors is the bbolt journal's; the PostgreSQL
// journal's are a table of its database (postgres.Journal.Cursors).
type Cursors interface {
	// Load returns the seq stored under name; ok is false when none is.
	Load(ctx context.Context, name string) (seq uint64, ok bool, err error)
	// Store sets name to next, durably, if it still holds prev, and
	// reports whether it did: a compare-and-set. prev 0 also matches a
	// name that holds nothing, which Store then creates. Storing the
	// value a name already holds succeeds and changes nothing.
	Store(ctx context.Context, name string, prev, next uint64) (stored bool, err error)
}

// FileCursors keep cursors in a small JSON file, replaced whole on every
// Store: written to a temporary file beside it, fsynced, renamed over it,
// and the directory fsynced, so a crash leaves the old cursors or the new
// ones. It serves one process: the one that holds the bbolt journal's
// lock (serve keeps it at <journal.path>.notify).
type FileCursors struct {
	path   string
	mu     sync.Mutex
	loaded bool
	seqs   map[string]uint64
}

// NewFileCursors returns the cursors kept at path; the file is read on
// first use and created by the first Store.
func NewFileCursors(path string) *FileCursors { return &FileCursors{path: path} }

// cursorFile is the file's content.
type cursorFile struct {
	Cursors map[string]uint64 `json:"cursors"`
}

var _ Cursors = (*FileCursors)(nil)

// Load implements Cursors.
func (f *FileCursors) Load(_ context.Context, name string) (uint64, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.read(); err != nil {
		return 0, false, err
	}
	seq, ok := f.seqs[name]
	return seq, ok, nil
}

// Store implements Cursors.
func (f *FileCursors) Store(_ context.Context, name string, prev, next uint64) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.read(); err != nil {
		return false, err
	}
	cur, ok := f.seqs[name]
	switch {
	case cur != prev:
		return false, nil
	case ok && cur == next:
		return true, nil
	}
	seqs := make(map[string]uint64, len(f.seqs)+1)
	for k, v := range f.seqs {
		seqs[k] = v
	}
	seqs[name] = next
	data, err := json.Marshal(cursorFile{Cursors: seqs})
	if err != nil {
		return false, fmt.Errorf("encode notification cursors: %w", err)
	}
	if err := tlsca.WriteFile(f.path, data, 0o600); err != nil {
		return false, fmt.Errorf("store notification cursor %s: %w", name, err)
	}
	f.seqs = seqs
	return true, nil
}

// read loads the file once; a missing file holds no cursors.
func (f *FileCursors) read() error {
	if f.loaded {
		return nil
	}
	data, err := os.ReadFile(f.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		f.seqs, f.loaded = map[string]uint64{}, true
		return nil
	case err != nil:
		return fmt.Errorf("read notification cursors: %w", err)
	}
	var cf cursorFile
	if err := json.Unmarshal(data, &cf); err != nil {
		return fmt.Errorf("read notification cursors %s: %w (remove the file to start every webhook from the journal's end)", f.path, err)
	}
	if cf.Cursors == nil {
		cf.Cursors = map[string]uint64{}
	}
	f.seqs, f.loaded = cf.Cursors, true
	return nil
}
