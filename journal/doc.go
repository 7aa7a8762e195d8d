// Package journal is toolguard's durable record of guarded calls: one step per
// idempotency key, an append-only event log of every transition, and the
// queries operators use to inspect them. The default backend is a bbolt file
// whose commits are fsynced and shared between concurrent callers (group
// commit). Every backend implements Store and passes the
// conformance suite in package journaltest.
//
// # Write-ahead
//
// Callers never write a step directly. They hand Apply a Mutation, which reads
// the current record and returns the Change to make. Apply runs the mutation
// exactly once inside a write transaction, commits it durably (fsync), and only
// then returns. A step is therefore durable in the "started" state before its
// request leaves the process, and its outcome is durable before the agent sees
// it. Every change appends an Event with a strictly increasing Seq.
//
// # Group commit
//
// An fsync is the cost of a write, so concurrent Applies share commits: a
// committer goroutine commits everything queued at that moment in one
// transaction, in arrival order, and callers arriving during that commit
// queue up for the next one, which it starts as soon as the previous one is
// durable. There is no timer, so a lone caller pays exactly one commit.
// Each mutation sees the writes of those before it in the same transaction;
// a mutation that fails (error, ErrNoChange, an invalid Change, a panic)
// writes nothing and affects only its own caller.
//
// Nothing is retried. When a commit fails, every Apply of its batch returns
// the error (wrapping ErrUnavailable) and none of it is written. Bolt runs
// each mutation once; the Mutation contract nevertheless allows a backend
// to run it again (an optimistic writer that lost a race), so mutations are
// pure and their callers act only on what Apply returned.
//
// # Transitions
//
// Event types are the EventType constants. Every backend checks each
// Change against the allowlist (Allowed, AllowedChange) inside Apply: a
// committed or verified effect is never sent or failed again, a held step
// changes status only when an operator releases it, and a step enters
// started only with a claim. Each change numbers its events per key
// (Event.KeySeq, 1, 2, 3... without gaps) and leaves the step's Revision at
// the last of them.
//
// # Fencing
//
// Every Open of a writable journal starts a new epoch. A Change with Claim set
// stamps the step with the current epoch and a fresh, strictly increasing
// fencing token; a later writer that still holds an older token is refused
// with ErrFenced (see Fenced). After a restart, every "started" step of an
// older epoch is known to be not in flight: bbolt keeps leases in the
// process (Step.LeaseUntil stays zero, Renew only checks the claim), and
// Watch wakes the callers waiting on a key after each of its commits.
//
// # Queries
//
// Secondary indexes by status (in update-time order within each status, so
// that they also serve walks by time), hold and workflow are kept in the
// same transactions as the steps, together with counters by status and
// hold, so List with a filter walks only the matching index entries and
// Count reads a few counters, whatever the size of the journal. Check
// verifies all of it.
package journal
