// Package metrics is toolguard's Prometheus metrics: the counters,
// histograms and gauges of the proxy, the journal's commits and the
// background work, on a registry of their own that the admin API serves
// at /metrics. The proxy and the journal backends record into it through
// its methods, and a nil *Metrics records nothing, so a component without
// metrics needs no check.
//
// Labels carry only rule names and fixed words, never a credential, a key
// or a body; every counter with a fixed vocabulary exists at zero from the
// start, so that rates and alerts see a series before its first event.
// docs/operations.md lists the metrics.
//
// The package imports journal, lifecycle, rules and policy; it knows
// nothing of proxy, which calls it.
package metrics
