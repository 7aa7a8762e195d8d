// Package journal is the contract of toolguard's durable record of guarded
// calls: one step per idempotency key, an append-only event log of every
// transition, and the queries operators use to inspect them. It declares
// what every backend implements (Store, and the optional Maintainer) and the
// vocabulary they share (Step, Event, Workflow, their statuses, Mutation,
// the transition allowlist and the errors); the backends are packages bolt
// (a bbolt file, the default) and postgres, and both pass the conformance
// suite in package journaltest.
//
// # Write-ahead
//
// Callers never write a step directly. They hand Apply a Mutation, which reads
// the current record and returns the Change to make. Apply runs the mutation
// inside a write transaction, commits it durably (fsync), and only then
// returns. A step is therefore durable in the "started" state before its
// request leaves the process, and its outcome is durable before the agent sees
// it. Every change appends an Event with a strictly increasing Seq.
//
// A mutation that fails (error, ErrNoChange, an invalid Change, a panic)
// writes nothing and affects only its own caller. When a commit fails,
// Apply returns the error (wrapping ErrUnavailable) and nothing is written;
// when its acknowledgement is lost, the error wraps ErrCommitUnknown. The
// Mutation contract allows a backend to run a mutation more than once (an
// optimistic writer that lost a race), so mutations are pure and their
// callers act only on what Apply returned.
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
// # Observations
//
// In observe mode the proxy forwards calls untouched and journals each as an
// observation: a Step with Observed set and an EventObserved saying what
// enforcement would have done (Would). The allowlist keeps observations and
// guarded steps apart: an observation never changes a guarded step and is
// never held or claimed, and a guarded step replaces an observation as if
// its key were new (package observe).
//
// # Fencing
//
// Every Open of a writable journal starts a new epoch. A Change with Claim set
// stamps the step with the current epoch and a fresh, strictly increasing
// fencing token; a later writer that still holds an older token is refused
// with ErrFenced (see Fenced). After a restart, every "started" step of an
// older epoch is known to be not in flight. A backend keeps leases either in
// the process (bbolt: Step.LeaseUntil stays zero, Renew only checks the
// claim) or in the data (PostgreSQL: Renew extends Step.LeaseUntil), and
// Watch wakes the callers waiting on a key after each of its commits.
//
// # Limits and expiry
//
// A Change that creates a step may carry limits, checked by the backend in
// the same atomic write: a Budget (at most Calls steps of one caller, API
// and route created within Per; over it, ErrOverBudget) and MaxHolds (at
// most that many held steps of one caller; over it, ErrTooManyHolds).
// Either refusal writes nothing. ExpireHolds removes the holds for
// approval that were never sent and nobody settled, with an expired event
// each (the retention of held steps); holds for review are never removed.
//
// # Queries
//
// List selects steps by status, hold, workflow or pending verification
// (Filter), Count reads the numbers of steps by status and hold (Counts),
// and Events reads the event log in order. Workflows are records of their
// own (Workflow), whose status derives from their steps (WorkflowCounts);
// a checkpoint is a compare-and-swap on a workflow's version
// (VersionError). Check verifies a backend's store and these invariants.
package journal
