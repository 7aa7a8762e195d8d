//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// clockTick is the unit of utime and stime in /proc/PID/stat (USER_HZ,
// 100 on Linux).
const clockTick = 10 * time.Millisecond

// statFields are the fields of /proc/PID/stat after the command name,
// starting with the state; nil when it cannot be read (the process is
// gone).
func statFields(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	// The command name, in parentheses, may hold spaces: fields start after it.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	if f := strings.Fields(s); len(f) >= 13 {
		return f
	}
	return nil
}

// cpuTime is the user+system CPU time a process has used so far; 0 when it
// cannot be read (the process is gone).
func cpuTime(pid int) time.Duration {
	f := statFields(pid)
	if f == nil {
		return 0
	}
	// After the name: state(0) ... utime(11) stime(12).
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * clockTick
}

// faults is the page faults a process has taken so far, minor (the page
// was in memory: the kernel maps it) and major (it was read from disk).
func faults(pid int) int64 {
	f := statFields(pid)
	if f == nil {
		return 0
	}
	// After the name: minflt(7) cminflt(8) majflt(9).
	minor, _ := strconv.ParseInt(f[7], 10, 64)
	major, _ := strconv.ParseInt(f[9], 10, 64)
	return minor + major
}

func faultsOf(pids []int) int64 {
	var n int64
	for _, p := range pids {
		n += faults(p)
	}
	return n
}

// machineBusy is the time the machine's CPUs have spent busy so far, all
// CPUs summed (/proc/stat: user, nice, system, irq and softirq); 0 when it
// cannot be read.
func machineBusy() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7} { // user nice system (idle iowait) irq softirq
		n, _ := strconv.ParseInt(f[i], 10, 64)
		ticks += n
	}
	return time.Duration(ticks) * clockTick
}

func cpuTimes(pids []int) time.Duration {
	var t time.Duration
	for _, p := range pids {
		t += cpuTime(p)
	}
	return t
}

// backendPIDs are the server processes connected to database name (the
// harness runs on the server's machine: their CPU time is in /proc).
func (s *pgServer) backendPIDs(ctx context.Context, name string) []int {
	return s.pids(ctx, "SELECT pid FROM pg_stat_activity WHERE datname = $1", name)
}

// pids runs query, which selects pids from pg_stat_activity; nil when it
// cannot.
func (s *pgServer) pids(ctx context.Context, query string, args ...any) []int {
	conn, err := pgx.Connect(ctx, s.adminDSN())
	if err != nil {
		return nil
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, query, args...)
	if err != nil {
		return nil
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil
	}
	out := make([]int, len(pids))
	for i, p := range pids {
		out[i] = int(p)
	}
	return out
}

// waitSampler samples what the active server processes of one database
// are waiting on (pg_stat_activity.wait_event; "CPU" when none) while a
// load runs.
type waitSampler struct {
	stop context.CancelFunc
	done chan map[string]int
}

func (s *pgServer) sampleWaits(ctx context.Context, name string, every time.Duration) *waitSampler {
	ctx, cancel := context.WithCancel(ctx)
	w := &waitSampler{stop: cancel, done: make(chan map[string]int, 1)}
	go func() {
		counts := map[string]int{}
		defer func() { w.done <- counts }()
		conn, err := pgx.Connect(ctx, s.adminDSN())
		if err != nil {
			return
		}
		defer conn.Close(context.Background())
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			// A heavyweight lock wait names its object: class/object/database
			// (pg_database/0/0 is the lock NOTIFY takes at commit).
			rows, err := conn.Query(ctx, `SELECT coalesce(a.wait_event_type || ':' || a.wait_event, 'CPU') ||
				coalesce(' (' || (SELECT l.classid::regclass || '/' || l.objid || '/' || l.database FROM pg_locks l
					WHERE l.pid = a.pid AND NOT l.granted AND l.locktype = 'object' LIMIT 1) || ')', '')
				FROM pg_stat_activity a WHERE a.datname = $1 AND a.state = 'active' AND a.pid <> pg_backend_pid()`, name)
			if err != nil {
				return
			}
			events, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return
			}
			for _, e := range events {
				counts[e]++
			}
			counts[""]++ // the number of samples
		}
	}()
	return w
}

// finish stops sampling and returns the wait events seen, most frequent
// first, as the mean number of active processes in each.
func (w *waitSampler) finish() []string {
	w.stop()
	counts := <-w.done
	n := counts[""]
	delete(counts, "")
	if n == 0 {
		return nil
	}
	type kv struct {
		k string
		v int
	}
	var all []kv
	for k, v := range counts {
		all = append(all, kv{k, v})
	}
	slices.SortFunc(all, func(a, b kv) int { return b.v - a.v })
	var out []string
	for i, e := range all {
		if i == 5 {
			break
		}
		out = append(out, fmt.Sprintf("%s %.2f", e.k, float64(e.v)/float64(n)))
	}
	return out
}
