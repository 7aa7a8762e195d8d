// Package verifiers asks an external system about an effect: lookups (did
// this call take effect?) and verification probes (is the effect visible?).
// Every answer is three-valued — yes, no or unknown — and anything that is
// not clearly yes or no, a malformed or oversized answer included, is
// unknown.
package verifiers
