package main

import (
	"context"
	"log/slog"
	"net/url"
	"time"

	"github.com/toolguard/toolguard/config"
	"github.com/toolguard/toolguard/internal/wire"
	"github.com/toolguard/toolguard/metrics"
	"github.com/toolguard/toolguard/telemetry"
)

// tracingGrace bounds the export of the last spans when serve returns
// without draining (an error); a drain gives them what is left of its
// timeout instead.
const tracingGrace = 5 * time.Second

// startTracing builds the tracer provider the configuration describes
// (nothing is traced without an endpoint) and says where spans go.
func startTracing(cfg config.Config, log *slog.Logger, metrics *metrics.Metrics) (*telemetry.Provider, error) {
	p, err := telemetry.New(wire.Telemetry(cfg), telemetry.Options{Version: version, Registerer: metrics.Registerer(), Logger: log})
	if err != nil {
		return nil, err
	}
	if t := cfg.Telemetry; t.Enabled() {
		endpoint := t.TracesEndpoint
		if endpoint == "" {
			endpoint = t.Endpoint
		}
		if u, err := url.Parse(endpoint); err == nil {
			endpoint = u.Redacted()
		}
		log.Info("tracing: spans are exported over OTLP/HTTP", "endpoint", endpoint, "protocol", t.Protocol,
			"service_name", t.ServiceName, "sampler", t.Sampler)
	}
	return p, nil
}

// stopTracing exports the spans still queued, until deadline.
func stopTracing(p *telemetry.Provider, log *slog.Logger, deadline time.Time) {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		log.Warn("tracing: spans still queued at shutdown were dropped", "error", err)
	}
}
