//go:build linux

package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// memStat is a process's memory as /proc/PID/status reports it, in bytes.
type memStat struct {
	// Peak is VmHWM: the peak resident set since the process started or
	// since the last resetPeak.
	Peak int64
	// RSS is VmRSS now; Anon and File split it into anonymous memory (heap,
	// stacks) and file-backed pages (the binary, and bbolt's mmap of the
	// journal, which the kernel can reclaim).
	RSS, Anon, File int64
}

func readMem(pid int) (memStat, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memStat{}, err
	}
	defer f.Close()
	var m memStat
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		var dst *int64
		switch k {
		case "VmHWM":
			dst = &m.Peak
		case "VmRSS":
			dst = &m.RSS
		case "RssAnon":
			dst = &m.Anon
		case "RssFile":
			dst = &m.File
		default:
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return memStat{}, fmt.Errorf("parse %s %q: %w", k, v, err)
		}
		*dst = kb << 10
	}
	return m, sc.Err()
}

// resetPeak resets VmHWM to the current RSS (Linux ≥ 4.0: writing 5 to
// clear_refs), so that the next readMem reports the peak of what ran in
// between. It fails where the kernel does not allow it; peaks are then
// since the start of the process.
func resetPeak(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
