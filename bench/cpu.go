//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// clockTick is the unit of utime and stime in /proc/PID/stat (USER_HZ,
// 100 on Linux).
const clockTick = 10 * time.Millisecond

// cpuTime is the user+system CPU time a process has used so far; 0 when it
// cannot be read (the process is gone).
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: fields start after it.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	f := strings.Fields(s)
	if len(f) < 13 {
		return 0
	}
	// After the name: state(0) ... utime(11) stime(12).
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * clockTick
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
	conn, err := pgx.Connect(ctx, s.adminDSN())
	if err != nil {
		return nil
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE datname = $1", name)
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
