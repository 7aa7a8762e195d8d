// Package bolt is the journal's default backend: one bbolt file, written by
// one process, with a write-ahead log beside it whose appends are fsynced
// and shared between concurrent callers. It implements journal.Store and
// journal.Maintainer (online backups, the file's size), keeps its indexes
// and counters in the same transactions as the steps, and upgrades and
// compacts its file.
//
// # Group commit and the log
//
// An fsync is the cost of a write, so concurrent Applies share them: the
// committer (a lone caller itself, on its own goroutine; a goroutine of
// its own under load) runs everything queued at that moment, in arrival
// order, in the open write transaction, appends what it wrote to the log
// as one frame, syncs it once and answers the batch; callers arriving
// meanwhile queue up for the next batch, which starts at once. There is no
// timer before a write, so a lone caller pays exactly one log sync.
// Each mutation sees the writes of those before it; a mutation that fails
// (error, journal.ErrNoChange, an invalid Change, a panic) writes nothing
// and affects only its own caller.
//
// The transaction is committed to the file (a checkpoint, with bbolt's own
// two fsyncs) every 100 ms, every 4 MiB of log, when idle, on Close, and
// before any read but Get, which reads the steps written since the last
// checkpoint from memory. A writable Open applies the frames a crash left
// in the log before anything else; a read-only Open of such a file applies
// them first too (wal.go, checkpoint.go).
//
// Nothing is retried. When a batch cannot be logged, every Apply of it
// returns the error (wrapping journal.ErrUnavailable) and none of it is
// written. Each mutation runs once (commit.go says why).
//
// # Leases
//
// A journal file has one writer process, so leases live in the process:
// Step.LeaseUntil stays zero, Renew only checks the claim, and after a
// restart every started step of an older epoch is known to be not in
// flight. Watch wakes the callers waiting on a key after each of its
// writes is logged.
//
// # Layout
//
// Steps are stored by record sequence (records.go). Secondary indexes by
// status (in update-time order within each status, so that they also serve
// walks by time), hold and workflow are kept in the same transactions as
// the steps, together with counters by status and hold, so List with a
// filter walks only the matching index entries and Count reads a few
// counters, whatever the size of the journal. Route budgets, each caller's
// count of open holds and the holds that may expire are indexed the same
// way (quota.go). Check runs bbolt's own
// consistency check and verifies all of it. A writable Open upgrades a file
// of an older layout in place (migrate.go); Compact rewrites a file without
// the free pages that sweeps leave behind.
package bolt
