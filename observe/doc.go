// Package observe records what toolguard would have done with the calls of
// an API in observe mode, which pass untouched: each call's observation is
// decided when it arrives and journaled in the background once its answer
// has been streamed. It keeps the process's observations that the journal
// does not show yet, so that a duplicate is decided on what happened to the
// call before it.
//
// # Observations
//
// A Recorder starts an observation (Start, or StartRefused for a call
// enforcement would have refused before deriving its key) from a Call, the
// proxy's side of one call: what the recovery table reads of it, the
// version policy, and how its protocol records an attempt. The observation
// runs the recovery table (lifecycle.Decide) on the key's record with no
// claim and no lookup, counting the calls this process has in flight and
// the records it has not written yet.
//
// The call ends with Observation.Ended, which Tee calls once the answer
// has been read to its end or closed, or with Dropped when nothing was
// sent. Ended writes the call's decision line and metrics at once and the
// journal in the background: a slow or failing journal never delays or
// changes an answer, it only loses observations. Recorder.Wait waits for
// those writes.
//
// # Dependencies
//
// The recovery table and the record of an observation are package
// lifecycle's; the journal is reached through the small Journal interface
// and the counters through Metrics. Nothing here imports package proxy,
// which implements Call.
package observe
