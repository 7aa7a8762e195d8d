//go:build linux

package main

import (
	"os"
	"runtime"
	"slices"
	"syscall"
	"time"
)

// diskProbe is the cost of a durable write on the journal's file system:
// what every guarded call pays at least once (twice at concurrency 1). It
// puts the guarded numbers of different machines, or of one machine under
// different I/O load, side by side.
type diskProbe struct {
	When  string  `json:"when"`
	Syncs int     `json:"syncs"`
	P50MS float64 `json:"fdatasync_p50_ms"`
	P99MS float64 `json:"fdatasync_p99_ms"`
	MaxMS float64 `json:"fdatasync_max_ms"`
	// CPUUS is the CPU time of the probing thread per write and
	// fdatasync, the kernel's side included.
	CPUUS float64 `json:"fdatasync_cpu_us"`
	// CommitP50MS is the p50 of a write shaped like one bbolt commit of a
	// single guarded-call transition: commitPages pages, fdatasync, the
	// meta page, fdatasync. Two of them are the floor of a guarded call at
	// concurrency 1, whatever the CPU does.
	CommitP50MS float64 `json:"bbolt_commit_p50_ms"`
}

// commitPages is what one bbolt commit of a single transition writes
// (journal/bolt's BenchmarkCall measures about 14.5 pages per write at
// concurrency 1).
const commitPages = 15

// probeDisk rewrites a 4 KiB page at a random-ish offset of a file in dir
// and fdatasyncs it, for d.
func probeDisk(dir, when string, d time.Duration) (diskProbe, error) {
	f, err := os.CreateTemp(dir, "fsync-probe-")
	if err != nil {
		return diskProbe{}, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	page := make([]byte, 4096)
	var lat []time.Duration
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0 := threadCPU()
	for i, end := 0, time.Now().Add(d); time.Now().Before(end); i++ {
		page[0] = byte(i)
		t0 := time.Now()
		if _, err := f.WriteAt(page, int64(i%64)*4096); err != nil {
			return diskProbe{}, err
		}
		if err := fdatasync(f); err != nil {
			return diskProbe{}, err
		}
		lat = append(lat, time.Since(t0))
	}
	cpu := threadCPU() - cpu0
	slices.Sort(lat)
	r := loadResult{latencies: lat}
	commit, err := probeCommit(f, len(lat)/4+1)
	if err != nil {
		return diskProbe{}, err
	}
	return diskProbe{When: when, Syncs: len(lat), P50MS: ms(r.percentile(0.5)), P99MS: ms(r.percentile(0.99)), MaxMS: ms(lat[len(lat)-1]),
		CommitP50MS: ms(commit), CPUUS: float64(cpu.Nanoseconds()) / 1e3 / float64(len(lat))}, nil
}

// probeCommit writes n commits shaped like bbolt's (commitPages pages at
// new offsets, fdatasync, the meta page, fdatasync) and returns their p50.
func probeCommit(f *os.File, n int) (time.Duration, error) {
	page := make([]byte, 4096)
	lat := make([]time.Duration, 0, n)
	for i := range n {
		t0 := time.Now()
		for p := range commitPages {
			if _, err := f.WriteAt(page, int64(2+(i*commitPages+p)%4096)*4096); err != nil {
				return 0, err
			}
		}
		if err := fdatasync(f); err != nil {
			return 0, err
		}
		if _, err := f.WriteAt(page, 0); err != nil {
			return 0, err
		}
		if err := fdatasync(f); err != nil {
			return 0, err
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	return lat[len(lat)/2], nil
}

func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }

// threadCPU is the user and system time of the calling thread so far.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rusageThread is RUSAGE_THREAD, which package syscall does not name.
const rusageThread = 1
