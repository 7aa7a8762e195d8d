// Package retention removes what the journal no longer needs to keep:
// finished steps older than the retention, and holds for approval that
// nobody approved within the hold expiry (never sent: a retry is a new
// request). It works in small batches, so that requests never wait long
// behind it.
package retention
