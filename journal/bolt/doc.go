// Package bolt is the journal's default backend: one bbolt file, written by
// one process, whose commits are fsynced and shared between concurrent
// callers. It implements journal.Store and journal.Maintainer (online
// backups, the file's size), keeps its indexes and counters in the same
// transactions as the steps, and upgrades and compacts its file.
//
// # Group commit
//
// An fsync is the cost of a write, so concurrent Applies share commits: a
// committer goroutine commits everything queued at that moment in one
// transaction, in arrival order, and callers arriving during that commit
// queue up for the next one, which it starts as soon as the previous one is
// durable. There is no timer, so a lone caller pays exactly one commit.
// Each mutation sees the writes of those before it in the same transaction;
// a mutation that fails (error, journal.ErrNoChange, an invalid Change, a
// panic) writes nothing and affects only its own caller.
//
// Nothing is retried. When a commit fails, every Apply of its batch returns
// the error (wrapping journal.ErrUnavailable) and none of it is written.
// Each mutation runs once (commit.go says why).
//
// # Leases
//
// A journal file has one writer process, so leases live in the process:
// Step.LeaseUntil stays zero, Renew only checks the claim, and after a
// restart every started step of an older epoch is known to be not in
// flight. Watch wakes the callers waiting on a key after each of its
// commits.
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
