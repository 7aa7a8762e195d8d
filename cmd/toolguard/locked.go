package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/toolguard/toolguard/journal/bolt"
)

// cliLockWait is how long CLI commands wait for a journal file's lock;
// serve waits journal.open_timeout.
const cliLockWait = 2 * time.Second

// boltLockRetry is how often bbolt retries a held file lock; it gives up
// one retry before its Options.Timeout has passed.
const boltLockRetry = 50 * time.Millisecond

// lockedError turns an error wrapping bolt.ErrLocked into one line that
// says who holds the file and what to do; other errors pass unchanged. what
// is the advice for this caller.
func lockedError(err error, path string, waited time.Duration, what string) error {
	if !errors.Is(err, bolt.ErrLocked) {
		return err
	}
	holder := "another toolguard holds it"
	if pid, name := lockHolder(path); pid != 0 {
		holder = fmt.Sprintf("another toolguard holds it (pid %d, %s)", pid, name)
	}
	return fmt.Errorf("open journal %s: %w: %s; waited %s; %s", path, bolt.ErrLocked, holder, waited, what)
}
