// Package headerfilter decides which HTTP headers cross each boundary of
// the proxy: what a guarded call sends upstream, what of an upstream's
// answer is journaled and replayed, and where toolguard's own Toolguard-*
// namespace is cleared. It holds no state; every function returns or
// edits the header it is given.
package headerfilter
