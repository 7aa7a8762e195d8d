// Package journalhealth tracks whether the journal can write: a Monitor
// learns it from the result of every journal write (Recording wraps a
// journal.Store for that), and answers readiness from it. After a failed
// write it reports not ready until a later write succeeds or the journal
// answers a probe, so readiness comes back by itself, traffic or not.
package journalhealth
