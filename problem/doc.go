// Package problem is the problems toolguard answers a refused, held or
// failed call with: a fixed set of RFC 9457 problem types, each with its
// status and title. It renders a problem in the error format an API's
// rule file names (RFC 9457's, Stripe's error object, a JSON template),
// with the retry headers an agent's SDK reads to decide whether a retry
// can help.
//
// The problem types are a contract (DESIGN.md, "Errors"); the admin API's
// own problems are package admin's. The package imports lifecycle (the
// retry headers' names) and rules (the error formats) only.
package problem
