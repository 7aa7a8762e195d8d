//go:build linux

package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgWatch is what the harness reads of the PostgreSQL server around a
// cell: the CPU time of the backends connected to the bench database and
// of the server's auxiliary processes, and the server's own counters.
type pgWatch struct {
	server *pgServer
	db     string
	// aux are the checkpointer, background writer and WAL writer, which
	// work for every database. The database's backends are found at each
	// reading: a journal's pool opens connections as the load needs them.
	aux []int
}

// watch finds the processes of database db to measure.
func (s *pgServer) watch(ctx context.Context, db string) *pgWatch {
	return &pgWatch{server: s, db: db, aux: s.auxPIDs(ctx)}
}

// auxPIDs are the server's checkpointer, background writer and WAL writer.
func (s *pgServer) auxPIDs(ctx context.Context) []int {
	return s.pids(ctx, "SELECT pid FROM pg_stat_activity WHERE backend_type IN ('checkpointer', 'background writer', 'walwriter')")
}

// pgCounters are the server's cumulative counters a guarded call moves.
type pgCounters struct {
	// WAL written by the whole server (pg_stat_wal): records, full-page
	// images (the first change to a page after a checkpoint logs the whole
	// 8 KiB page) and bytes.
	WALRecords, WALFPI, WALBytes int64
	// Blocks of the bench database read from outside shared_buffers (the
	// kernel's page cache or the disk), and found in them.
	BlocksRead, BlocksHit int64
	// CPU time of each of the database's backends, by PID, and of the
	// auxiliary processes.
	BackendCPU map[int]time.Duration
	AuxCPU     time.Duration
	ok         bool
}

// read takes the counters now. The statistics are what the backends have
// reported so far: PostgreSQL flushes a backend's at most once a second,
// so a cell's figures may miss its last second's.
func (w *pgWatch) read(ctx context.Context) pgCounters {
	c := pgCounters{BackendCPU: map[int]time.Duration{}, AuxCPU: cpuTimes(w.aux)}
	for _, pid := range w.server.backendPIDs(ctx, w.db) {
		c.BackendCPU[pid] = cpuTime(pid)
	}
	conn, err := pgx.Connect(ctx, w.server.adminDSN())
	if err != nil {
		return c
	}
	defer conn.Close(ctx)
	err = conn.QueryRow(ctx, `SELECT w.wal_records, w.wal_fpi, w.wal_bytes::bigint, d.blks_read, d.blks_hit
		FROM pg_stat_wal w, pg_stat_database d WHERE d.datname = $1`, w.db).
		Scan(&c.WALRecords, &c.WALFPI, &c.WALBytes, &c.BlocksRead, &c.BlocksHit)
	c.ok = err == nil
	return c
}

// backendCPU is the CPU time the database's backends used from a to b: a
// backend that connected meanwhile counts from its start. (One that
// disconnected meanwhile is not counted; the journal's pool keeps its
// connections.)
func (a pgCounters) backendCPU(b pgCounters) time.Duration {
	var d time.Duration
	for pid, t := range b.BackendCPU {
		d += t - a.BackendCPU[pid]
	}
	return d
}

// pgPerCall is the server's work per completed call between two readings.
type pgPerCall struct {
	WALRecords float64 `json:"wal_records"`
	WALFPI     float64 `json:"wal_full_page_images"`
	WALBytes   float64 `json:"wal_bytes"`
	BlocksRead float64 `json:"blocks_read"`
	BlocksHit  float64 `json:"blocks_hit"`
	// AuxCPUUS is the checkpointer's, background writer's and WAL
	// writer's CPU time, in microseconds.
	AuxCPUUS float64 `json:"aux_cpu_us"`
}

// perCall divides what moved from a to b by calls; nil when the
// statistics could not be read.
func (a pgCounters) perCall(b pgCounters, calls int) *pgPerCall {
	if !a.ok || !b.ok || calls == 0 {
		return nil
	}
	n := float64(calls)
	return &pgPerCall{
		WALRecords: float64(b.WALRecords-a.WALRecords) / n,
		WALFPI:     float64(b.WALFPI-a.WALFPI) / n,
		WALBytes:   float64(b.WALBytes-a.WALBytes) / n,
		BlocksRead: float64(b.BlocksRead-a.BlocksRead) / n,
		BlocksHit:  float64(b.BlocksHit-a.BlocksHit) / n,
		AuxCPUUS:   float64((b.AuxCPU - a.AuxCPU).Microseconds()) / n,
	}
}

// The report's columns of pgPerCall.
const (
	pgColumns      = "WAL bytes/call | WAL full pages/call | blocks read/call | CPU µs/call PostgreSQL aux"
	pgColumnsAlign = " ---: | ---: | ---: | ---: |"
	pgColumnsNote  = "WAL bytes and full pages/call: written by the whole server (pg_stat_wal), per completed call; a full page is the 8 KiB image PostgreSQL logs at the first change to a page after each checkpoint, so a large table whose changes land on random pages logs more of them. blocks read/call: blocks of the bench database read from outside shared_buffers (pg_stat_database); the server's statistics are flushed at most once a second, so these may miss a cell's last second."
)

// cells are p's columns of the report ("–" when not measured).
func (p *pgPerCall) cells() string {
	if p == nil {
		return "– | – | – | –"
	}
	return fmt.Sprintf("%.0f | %.2f | %.1f | %.0f", p.WALBytes, p.WALFPI, p.BlocksRead, p.AuxCPUUS)
}
