package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/toolguard/toolguard/journal"
)

// cliLockWait is how long CLI commands wait for a journal file's lock;
// serve waits journal.open_timeout.
const cliLockWait = 2 * time.Second

// boltLockRetry is how often bbolt retries a held file lock; it gives up
// one retry before its Options.Timeout has passed.
const boltLockRetry = 50 * time.Millisecond

// lockedError turns an error wrapping journal.ErrLocked into one line that
// says who holds the file and what to do; other errors pass unchanged. what
// is the advice for this caller.
func lockedError(err error, path string, waited time.Duration, what string) error {
	if !errors.Is(err, journal.ErrLocked) {
		return err
	}
	holder := "another toolguard holds it"
	if pid, name := lockHolder(path); pid != 0 {
		holder = fmt.Sprintf("another toolguard holds it (pid %d, %s)", pid, name)
	}
	return fmt.Errorf("open journal %s: %w: %s; waited %s; %s", path, journal.ErrLocked, holder, waited, what)
}

// lockHolder finds the process holding a lock on the file at path in
// /proc/locks (Linux); 0 when it cannot tell.
func lockHolder(path string) (pid int, name string) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, ""
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, ""
	}
	f, err := os.Open("/proc/locks")
	if err != nil {
		return 0, ""
	}
	defer f.Close()
	ino := ":" + strconv.FormatUint(st.Ino, 10)
	for sc := bufio.NewScanner(f); sc.Scan(); {
		// "1: FLOCK  ADVISORY  WRITE 3809 fe:00:786440 0 EOF"; blocked
		// waiters are marked "->" and skipped.
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] == "->" || !strings.HasSuffix(fields[5], ino) {
			continue
		}
		if n, err := strconv.Atoi(fields[4]); err == nil && n != os.Getpid() {
			comm, _ := os.ReadFile("/proc/" + fields[4] + "/comm")
			return n, strings.TrimSpace(string(comm))
		}
	}
	return 0, ""
}
