// Package wirewatch watches one upstream attempt on its way to the wire:
// it refuses to let a request out once its claim's lease has ended, and
// keeps net/http from re-sending it on its own. Afterwards it tells
// whether any of a failed request's bytes may have left.
//
// # Never send outside the lease
//
// A claim lasts for the proxy's Options.Lease on the journal's clock (the database's
// on PostgreSQL), counted from when the journal wrote it. This process
// cannot read that clock, so it keeps its own view of the lease: on the
// monotonic clock, from the moment just before the claim statement went
// out, shortened by a margin for the local clock's rate. That end is never
// later than the journal's, however late the acknowledgement arrives (a
// stalled process, a GC pause, a slow network). The proxy checks it
// before the request is built, and a Wire again when the attempt's
// connection is handed over, immediately before the request is written;
// the Wire cancels connecting and writing at the lease's end. A renewal that the journal accepts
// extends the lease from the moment the renewal went out.
//
// What a lease cannot do: a pause of the process between the last check
// and the write (microseconds apart) still lets a request out late. Two
// things cover that window: the provider's own idempotency key, where the
// route has one, and the wait of a replica that takes the step over, which
// trusts a lookup's "absent" only after the old lease's end plus the
// longest send it allowed (see the proxy's settle.go).
package wirewatch
