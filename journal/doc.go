// Package journal is toolguard's durable record of guarded calls: one step per
// idempotency key, an append-only event log of every transition, and the
// queries operators use to inspect them. The default backend is a bbolt file
// whose commits are fsynced and shared between concurrent callers (group
// commit); the Bolt type is the only backend today.
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
// the error and none of it is written. Unlike bbolt's db.Batch, which may
// run a function again after a failed batch, a Mutation runs exactly once:
// its result is a decision its caller acts on (such as "send the request
// now"), so running it twice could decide twice.
//
// # Fencing
//
// Every Open of a writable journal starts a new epoch. A Change with Claim set
// stamps the step with the current epoch and a fresh, strictly increasing
// fencing token; a later writer that still holds an older token is refused
// with ErrFenced (see Fenced). After a restart, every "started" step of an
// older epoch is known to be not in flight.
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
