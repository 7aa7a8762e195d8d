// Package verification checks, after a step commits, that its effect is
// visible at the provider: it probes until the effect shows or the rule's
// deadline passes, then records the step verified or holds it for review.
// Across replicas sharing a journal, each pending verification is probed
// by one replica at a time, the one whose lease on it runs.
//
// A Verifier runs the probe loops; the proxy gives it the journal, a way
// to probe (HTTP or an MCP tool) and a way to renew a claim's lease.
// Credentials lends a caller's credential headers to a verification
// resumed after a restart, when the caller's next request arrives: they
// are held in memory only, never journaled.
package verification
