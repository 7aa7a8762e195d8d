// Package telemetry builds toolguard's OpenTelemetry tracer provider: spans
// go to an OTLP/HTTP collector through a batch processor behind a bounded
// queue that drops, and counts, what it cannot hold, so that exporting never
// blocks or slows a call. With no endpoint it builds nothing, and the proxy
// traces nothing at no cost.
//
// # Settings
//
// Settings are resolved by package config: the standard OTEL_* variables
// (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
// OTEL_EXPORTER_OTLP_PROTOCOL, OTEL_SERVICE_NAME, OTEL_TRACES_SAMPLER and
// OTEL_TRACES_SAMPLER_ARG) over the telemetry: section of the config file.
// The exporter reads the other OTEL_EXPORTER_OTLP_* variables (headers,
// timeout, compression, certificates) and the batch processor the OTEL_BSP_*
// ones from the process environment, as the SDK documents.
//
// # Dropped spans
//
// The SDK's batch processor drops spans silently when its queue is full
// and exposes no count of them. Spans therefore enter through a queue of
// this package (queue.go), which never blocks the goroutine ending a span
// and counts each span it drops, and the exporter is wrapped to count the
// spans of each batch it failed to deliver (a dead collector). Both add to
// toolguard_trace_spans_dropped_total.
package telemetry
