// Package abandoned settles, in the background, the steps a crash left
// started and that nobody came back for: a lookup that finds the effect
// records it, one that finds none marks the step failed and retryable, and
// anything else holds it for review. It never sends the call again, since
// nobody waits for that effect.
//
// Candidates are steps started, not held, untouched for AbandonAfter
// (never shorter than the lease plus the upstream timeout), that the proxy
// does not report active (in flight in this process, a last attempt that
// may still land, a caller that came back within AbandonAfter), and with
// no running lease of another replica. Each write re-checks, inside the
// journal, that the step is still the one the pass read (same claim and
// revision), so a caller's retry or another replica's resolver that got
// there first wins: on a shared journal the steps are settled once across
// replicas (their lookups, which only read, may run on more than one).
//
// Observations (observe mode) are never resolved: one left started is
// only marked failed once it is as old as an abandoned step.
package abandoned
