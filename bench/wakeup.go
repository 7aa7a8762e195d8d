//go:build linux

package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// wakeProbe is the cost of waking a process blocked in a read: what a
// guarded call pays, in CPU and in latency, each time one of toolguard's
// threads sleeps and is woken (on the client's request, the upstream's
// answer, each fdatasync, and the Go scheduler's own hand-offs). On a
// hypervisor that traps context switches it is far above the cost of the
// work a wake-up brings.
type wakeProbe struct {
	RoundTrips int     `json:"round_trips"`
	P50US      float64 `json:"round_trip_p50_us"`
	// CPUUS is the CPU time of the woken process (cat: one blocking read
	// and one write per round trip) per wake-up, from /proc/PID/schedstat.
	CPUUS float64 `json:"cpu_us_per_wakeup"`
}

// probeWakeup ping-pongs one byte through cat for d.
func probeWakeup(d time.Duration) (wakeProbe, error) {
	cmd := exec.Command("cat")
	in, err := cmd.StdinPipe()
	if err != nil {
		return wakeProbe{}, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return wakeProbe{}, err
	}
	if err := cmd.Start(); err != nil {
		return wakeProbe{}, fmt.Errorf("start cat: %w", err)
	}
	defer func() {
		in.Close()
		_ = cmd.Wait()
	}()
	b := []byte{0}
	ping := func() error {
		if _, err := in.Write(b); err != nil {
			return err
		}
		_, err := io.ReadFull(out, b)
		return err
	}
	if err := ping(); err != nil { // cat is running and blocked in its read
		return wakeProbe{}, err
	}
	cpu0, err := runTime(cmd.Process.Pid)
	if err != nil {
		return wakeProbe{}, err
	}
	var lat []time.Duration
	for end := time.Now().Add(d); time.Now().Before(end); {
		t0 := time.Now()
		if err := ping(); err != nil {
			return wakeProbe{}, err
		}
		lat = append(lat, time.Since(t0))
	}
	cpu1, err := runTime(cmd.Process.Pid)
	if err != nil {
		return wakeProbe{}, err
	}
	slices.Sort(lat)
	return wakeProbe{RoundTrips: len(lat), P50US: float64(lat[len(lat)/2].Nanoseconds()) / 1e3,
		CPUUS: float64((cpu1 - cpu0).Nanoseconds()) / 1e3 / float64(len(lat))}, nil
}

// runTime is the time a process has spent on a CPU, with the nanosecond
// resolution of /proc/PID/schedstat (its first field).
func runTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", pid))
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, fmt.Errorf("/proc/%d/schedstat: empty", pid)
	}
	ns, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/schedstat: %w", pid, err)
	}
	return time.Duration(ns), nil
}

// switches is the number of times the threads of a process have been
// switched out so far (voluntary and not), from each thread's
// /proc/PID/task/TID/status; 0 when the process is gone. A thread that
// exits between two readings takes its count with it.
func switches(pid int) int64 {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	var n int64
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "voluntary_ctxt_switches:"); ok {
				n += atoi64(v)
			} else if v, ok := strings.CutPrefix(line, "nonvoluntary_ctxt_switches:"); ok {
				n += atoi64(v)
			}
		}
	}
	return n
}

func switchesOf(pids []int) int64 {
	var n int64
	for _, p := range pids {
		n += switches(p)
	}
	return n
}

func atoi64(s string) int64 {
	n, _ := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	return n
}
