// Package lifecycle is the pure logic of a guarded step's life: the
// recovery table (Decide) that says what to do with an arriving call, and
// the transitions that say how the step's record changes. Everything in it
// is a function of values (a step, a route, what an attempt or a lookup
// established, the time), with no I/O, so that the proxy's pipeline,
// background work and observe mode decide alike and every row is tested as
// a table.
//
// # The recovery table
//
// Decide is the recovery table of DESIGN.md ("Step states" and "Recovery
// of a started step"): from a Situation (the step, whether it is in
// flight, the route's Strategy and effect, a lookup's LookupAnswer) to a
// Decision (an Action, a hold and its reason, whether it recovers an
// interrupted call). RecoveryOf gives a route's Strategy; Would names what
// a Decision would have done, for observe mode.
//
// # Transitions
//
// Each transition (Claim, Hold, RecordFound, Outcome, MCPOutcome, Abandon,
// VerifyFinish, Observed, ...) is a pure function of the current record
// and of values captured before journal.Apply, so a backend may run the
// mutation that calls it more than once; the journal checks every change
// against its allowlist (journal.Allowed). The table of them is at the top
// of transitions.go.
//
// # Leases and retry signals
//
// Lease is a claim's lease as this process measures it, never ending later
// than the journal's; RetrySignals are what an answer says about retrying
// it (Retry-After, Stripe-Should-Retry), and Backoff whether a stored
// failure asked to wait.
//
// The package imports journal, rules and mcp only; proxy imports it, and
// nothing here knows about proxy.
package lifecycle
