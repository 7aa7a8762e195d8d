package bolt

import (
	"errors"
	"fmt"
)

// Errors of the bbolt backend, besides the journal's own (journal.ErrNotFound,
// journal.ErrFenced...), grouped by operation. Classify them with errors.Is;
// they are wrapped as "verb object: %w" with the path.

// Open.
var (
	// ErrLocked means another process (or another Open in this process)
	// holds the journal file, and the lock was not released within
	// Options.Timeout.
	ErrLocked = errors.New("journal file is locked")
	// ErrSchema means the file was written by a newer toolguard, or is not a
	// toolguard journal, or (with ErrNeedsUpgrade) needs an upgrade that a
	// read-only Open cannot make.
	ErrSchema = errors.New("unsupported journal schema")
	// ErrNeedsUpgrade means the file has an older layout, which a writable
	// Open upgrades; a read-only Open refuses it with ErrSchema and this.
	ErrNeedsUpgrade = errors.New("journal needs an upgrade")
)

// panicError carries a mutation's panic from the committing goroutine to the
// goroutine that called Apply, where it is raised again.
type panicError struct {
	key   string
	value any
	stack []byte
}

func (p *panicError) Error() string {
	return fmt.Sprintf("journal: mutation of step %s panicked: %v\n\n%s", p.key, p.value, p.stack)
}
