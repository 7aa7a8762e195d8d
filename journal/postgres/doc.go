// Package postgres is the PostgreSQL backend of toolguard's journal: any
// number of toolguard replicas share one database and so one truth about
// every idempotency key. It implements journal.Store with the semantics of
// the bbolt backend (package bolt), and passes the same conformance suite.
//
// # Schema
//
// The schema (tables steps, events, workflows, meta, notify_cursors,
// sequence epochs) is
// toolguard's: numbered migrations embedded in the binary
// (migrations/NNNN_name.sql), recorded in schema_version. A writable Open
// migrates under a PostgreSQL advisory lock, so replicas starting together
// migrate one after the other; Migrate does the same for "toolguard
// journal migrate". A schema newer than the binary is refused
// (ErrSchemaNewer). Options.Schema names the PostgreSQL schema (default
// "toolguard"), so one database can hold several journals, and tests one
// each.
//
// # Transitions
//
// Apply reads the step's row together with the database's now() (one round
// trip, no commit; none when the journal has a hint of the key, what it
// last read or wrote of it, see hints.go), runs the mutation, and writes
// its change in one
// statement that commits on its own under READ COMMITTED: the step's
// UPDATE ... WHERE revision = <the revision read> (or INSERT ... ON
// CONFLICT DO NOTHING for a new key), its events numbered Revision+1.. per
// key and its workflow's counts; for the final transition of a step that
// a replica waits for (Watch), a pg_notify follows the commit, sent in
// batches by a goroutine of its own (a NOTIFY inside the write would
// serialise commits on PostgreSQL's notification lock; see notify.go). A
// writer that lost a race matches no row, writes nothing, reads again and
// runs the mutation again. A guarded call therefore costs two committing
// round trips (the claim, the outcome) after the Get that finds no step,
// and a replay one read.
//
// A claim stamps the step with the Journal's epoch (from the epochs
// sequence at Open, unique across replicas and restarts), the step's Fence
// plus one, and a lease ending at the database's now() + Change.Lease; the
// replicas' clocks are never compared. Renew extends the lease of a claim
// still held, in one UPDATE guarded by key, epoch and fence: of a started
// step (a call in flight) or of a committed one whose verification is
// pending (its verifier probes; the proxy takes a verification over once
// its lease lapsed, so one replica probes it).
//
// # The event feed
//
// A bigserial cannot order a feed that readers follow with "after seq N":
// numbers are taken when a transaction inserts, not when it commits, so a
// transaction that took 5 and commits after another took 6 and committed
// would be skipped by a reader already past 6. So each event records its
// transaction's id (pg_current_xact_id(), an xid8), and its seq is that id
// times 1024 plus its ordinal within the transaction. Events reads only
// seqs below pg_snapshot_xmin(pg_current_snapshot()) × 1024: every
// transaction with an id below the oldest one still running has finished,
// so no event can ever appear below that horizon again, and the feed
// orders events by transaction id, which is fixed before any of the
// transaction's events exist. A late commit delays the feed (for as long
// as the oldest write transaction of the cluster runs); it never makes it
// skip an event. Seqs increase strictly but are not dense.
//
// # Wake-ups
//
// Watch is a hint that a key's step changed, for callers waiting on
// another replica's outcome: the Journal's own writes signal at once.
// Watch marks the step watched (one UPDATE, by the waiter); the final
// transition (committed, verified, failed, a hold) of a watched step, on
// any replica, returns the mark with its write, and a NOTIFY follows the
// commit, received on one dedicated LISTEN connection per Journal. A step
// nobody waits for sends none, so a guarded call costs only its
// transitions' statements. Notifications can be lost
// (the listener reconnecting, which wakes every watcher), so callers poll
// as well: polling is the safety net, NOTIFY only shortens the wait.
//
// # Background work
//
// Sweep and ExpireHolds are safe to run on every replica at once: each
// locks the rows it removes with FOR UPDATE SKIP LOCKED, so replicas share
// the work. A creation limited by a budget or a cap on holds
// (journal.Change) counts and writes in one transaction under an advisory
// lock on what it counts (quota.go), so that replicas share the limit. Work
// that must run once across the replicas calls RunExclusive, which holds
// a PostgreSQL advisory lock named after the work while it runs.
// Hold notifications keep their cursors in notify_cursors (Cursors),
// moved by compare-and-set, and deliver each webhook's events under
// RunExclusive, so one replica delivers each event.
//
// # Faults
//
// A database that cannot be reached, or refuses for lack of resources, or
// is shutting down, gives errors wrapping journal.ErrUnavailable; nothing
// was written. A write whose connection broke after the statement was sent
// gives journal.ErrCommitUnknown: it may have committed, and the caller
// must re-read the step before deciding anything; so does a write whose
// session the server ended (FATAL), which can happen after its commit. A
// claim is reported committed only when PostgreSQL acknowledged its
// commit. A connection failure resets the pool, so that the connections an
// outage killed are dropped together, and a read that failed on one is
// tried once more.
//
// # Indexes
//
// Besides the primary keys (steps.key, events.seq, workflows.id):
//
//	steps_hold_idx      steps (hold, key) WHERE hold <> 0         the review queue (holds)
//	steps_status_idx    steps (status, updated_at)                a status, least recently updated first; counts
//	steps_updated_idx   steps (updated_at)                        all steps, most recent first
//	steps_verify_idx    steps (verify_by) WHERE verify_by IS NOT NULL   pending verifications, earliest first
//	steps_workflow_idx  steps (workflow, key) WHERE workflow <> ''  a workflow's steps
//	steps_sweep_idx     steps (updated_at) WHERE <finished>       retention sweeps, oldest first
//	steps_budget_idx    steps (caller, api, route, created_at) WHERE budgeted   route budgets
//	steps_caller_hold_idx  steps (caller) WHERE hold <> 0         a caller's open holds
//	steps_expiry_idx    steps (updated_at) WHERE hold = 1 AND status = 1   holds to expire, oldest first
//	events_key_idx      events (key, key_seq)                     a key's events
//	events_time_idx     events (time)                             retention of events
//
// # Shared secret
//
// The database keeps the fingerprint of the replicas' HMAC secret
// (Fingerprint: HMAC-SHA256 of a fixed text, hex), never the secret; a
// replica given another secret is refused at Open (ErrSecretMismatch),
// since it would derive other keys for the same intents.
package postgres
