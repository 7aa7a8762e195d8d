// Package telemetrytest is an OTLP/HTTP trace collector for tests: it
// receives spans on 127.0.0.1 and decodes them with the OpenTelemetry
// collector's own pdata (protobuf or JSON), so that tests check what goes
// over the wire. Tests wait for spans with Collector.WaitFor, which wakes
// up when spans arrive, never on a timer.
package telemetrytest
