package bolt

import (
	"log/slog"
	"time"
)

// Options configure Open. The zero value is a writable journal with a 1s
// lock timeout, no logging and the wall clock.
type Options struct {
	// Timeout bounds the wait for the file lock; zero or less means 1s.
	// bbolt allows one writer process per file.
	Timeout time.Duration
	// ReadOnly opens the file shared and read-only, for inspecting the
	// journal of a stopped proxy; Apply then fails with ErrReadOnly, and the
	// epoch is not incremented. When a crash left writes in the log beside
	// the file, Open applies them first, which writes the file once (and
	// needs it writable), unless SkipLog is set.
	ReadOnly bool
	// SkipLog opens a file read-only as it is, without the writes a crash
	// left in its log: for checking a file before anything is written to it.
	SkipLog bool
	// Logger receives fencing rejections and other notable events; nil
	// discards them.
	Logger *slog.Logger
	// OnCommit, when set, is called after every durable group commit with
	// its duration and the number of Applies it carried (metrics). It must
	// not block.
	OnCommit func(d time.Duration, batch int)
	// Now returns the time stamped on records; nil means time.Now.
	Now func() time.Time
	// ResidentBudget is how many bytes of the file's pages the process may
	// map beyond what it held after the last drop before it drops them
	// all again (resident.go): the RSS it spends to spare page faults.
	// Zero means DefaultResidentBudget; negative means never drop, so that
	// RSS grows to the size of the file.
	ResidentBudget int64
	// SeedStates lets Apply write any state, skipping the transition
	// allowlist (AllowedChange): for tests that set up what a crash would
	// have left. toolguard itself never sets it.
	SeedStates bool
}
