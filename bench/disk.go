//go:build linux

package main

import (
	"os"
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
}

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
	slices.Sort(lat)
	r := loadResult{latencies: lat}
	return diskProbe{When: when, Syncs: len(lat), P50MS: ms(r.percentile(0.5)), P99MS: ms(r.percentile(0.99)), MaxMS: ms(lat[len(lat)-1])}, nil
}

func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
