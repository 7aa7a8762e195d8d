package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
)

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
