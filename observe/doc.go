// Package observe records what toolguard would have done with the calls of
// an API in observe mode, which pass untouched. It keeps the process's
// observations that the journal does not show yet (Pending), so that a
// duplicate is decided on what happened to the call before it.
package observe
