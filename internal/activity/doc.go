// Package activity counts work in progress and says when there is none:
// a bounded counter whose Idle channel closes when the count drops to
// zero. The proxy uses it to refuse calls beyond its limit and to drain.
package activity
