// Package flight is the in-process table of guarded calls by step key:
// which calls this process has in flight, until when each counts as live,
// and which callers came back for a step that has no outcome yet. It
// keeps no state across restarts; the journal's claims and fencing are
// what hold between processes.
package flight
