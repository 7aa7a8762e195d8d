package telemetry

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// Protocols of the OTLP exporter.
const (
	ProtocolProtobuf = "http/protobuf" // the default
	ProtocolJSON     = "http/json"
)

// DefaultServiceName is the service.name of toolguard's spans when none is
// configured.
const DefaultServiceName = "toolguard"

// Settings say where and what to export. The zero value exports nothing.
type Settings struct {
	// Endpoint is the collector's OTLP/HTTP base URL
	// (http://collector:4318); spans go to its /v1/traces.
	Endpoint string
	// TracesEndpoint is the full URL spans go to; it wins over Endpoint.
	TracesEndpoint string
	// Protocol is ProtocolProtobuf ("" too) or ProtocolJSON.
	Protocol string
	// ServiceName is the service.name resource attribute; "" means
	// DefaultServiceName.
	ServiceName string
	// Sampler is an OTEL_TRACES_SAMPLER name; "" means
	// parentbased_always_on. SamplerArg is its ratio, for the
	// traceidratio samplers ("" means 1).
	Sampler    string
	SamplerArg string
}

// Enabled reports whether s names an endpoint: without one, nothing is
// traced.
func (s Settings) Enabled() bool { return s.Endpoint != "" || s.TracesEndpoint != "" }

// tracesURL is where spans are sent: TracesEndpoint as it is, or
// Endpoint's /v1/traces, as the OTLP exporter specification says.
func (s Settings) tracesURL() string {
	if s.TracesEndpoint != "" {
		return s.TracesEndpoint
	}
	return strings.TrimSuffix(s.Endpoint, "/") + "/v1/traces"
}

// Options are what New needs besides the settings.
type Options struct {
	// Version is the service.version resource attribute; "" leaves it out.
	Version string
	// Registerer receives toolguard_trace_spans_dropped_total; nil
	// registers it nowhere.
	Registerer prometheus.Registerer
	// Logger receives export failures, at most one warning a minute; nil
	// discards them.
	Logger *slog.Logger
	// QueueSize bounds the spans waiting for the batch processor
	// (default 2048); more are dropped, and counted.
	QueueSize int
}

// Provider is toolguard's tracer provider. The zero value, and a nil
// *Provider, trace nothing.
type Provider struct {
	tp    *sdktrace.TracerProvider
	queue *queue
}

// New builds the provider that s describes; when s names no endpoint, it
// returns a Provider that traces nothing (its Tracer is nil). It registers
// the drop counter either way, so that the series exists from the start.
// New sets the OpenTelemetry global error handler to log at debug level
// through o.Logger: export errors are reported, rate-limited, by the
// exporter wrapper instead.
func New(s Settings, o Options) (*Provider, error) {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	dropped := prometheus.NewCounter(prometheus.CounterOpts{Name: "toolguard_trace_spans_dropped_total",
		Help: "Spans that were not exported: dropped because the export queue was full, or in a batch the collector did not accept."})
	if o.Registerer != nil {
		if err := o.Registerer.Register(dropped); err != nil {
			return nil, fmt.Errorf("register the dropped spans counter: %w", err)
		}
	}
	if !s.Enabled() {
		return &Provider{}, nil
	}
	sampler, err := newSampler(s.Sampler, s.SamplerArg)
	if err != nil {
		return nil, err
	}
	exp, err := newExporter(s)
	if err != nil {
		return nil, err
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Debug("opentelemetry", slog.Any("error", err))
	}))
	q := newQueue(
		// Blocking, the batch processor holds up only the queue's own
		// goroutine: the queue in front drops, and counts, instead.
		sdktrace.NewBatchSpanProcessor(&countingExporter{SpanExporter: exp, dropped: dropped, log: log}, sdktrace.WithBlocking()),
		o.QueueSize, dropped)
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSampler(sampler),
		sdktrace.WithResource(newResource(s, o.Version, log)),
		sdktrace.WithSpanProcessor(q),
	)
	return &Provider{tp: tp, queue: q}, nil
}

// newExporter builds the OTLP/HTTP exporter. It connects directly: the
// proxy variables (HTTP_PROXY, HTTPS_PROXY) of a sidecar's environment
// may name toolguard itself.
func newExporter(s Settings) (*otlptrace.Exporter, error) {
	enc := otlptracehttp.EncodingProtobuf
	switch s.Protocol {
	case "", ProtocolProtobuf:
	case ProtocolJSON:
		enc = otlptracehttp.EncodingJSON
	default:
		return nil, fmt.Errorf("%w %q: toolguard exports over OTLP/HTTP (%s or %s)", errProtocol, s.Protocol, ProtocolProtobuf, ProtocolJSON)
	}
	u := s.tracesURL()
	if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return nil, fmt.Errorf("parse OTLP endpoint %q: want an absolute http(s) URL", u)
	}
	exp, err := otlptracehttp.New(context.Background(),
		otlptracehttp.WithEndpointURL(u),
		otlptracehttp.WithEncoding(enc),
		otlptracehttp.WithProxy(func(*http.Request) (*url.URL, error) { return nil, nil }),
	)
	if err != nil {
		return nil, fmt.Errorf("create OTLP exporter: %w", err)
	}
	return exp, nil
}

// newResource describes toolguard: service.name and service.version over
// what OTEL_RESOURCE_ATTRIBUTES says.
func newResource(s Settings, version string, log *slog.Logger) *resource.Resource {
	name := s.ServiceName
	if name == "" {
		name = DefaultServiceName
	}
	attrs := resource.WithAttributes(semconv.ServiceName(name))
	if version != "" {
		attrs = resource.WithAttributes(semconv.ServiceName(name), semconv.ServiceVersion(version))
	}
	r, err := resource.New(context.Background(), resource.WithFromEnv(), resource.WithTelemetrySDK(), attrs)
	if err != nil {
		// A partial resource (OTEL_RESOURCE_ATTRIBUTES did not parse)
		// is still returned, with every attribute that did.
		log.Warn("telemetry: resource attributes", slog.Any("error", err))
	}
	if r == nil {
		r = resource.Empty()
	}
	return r
}

// Tracer is the tracer of toolguard's spans; nil when nothing is traced
// (a nil Tracer in proxy.Options traces nothing, at no cost).
func (p *Provider) Tracer() trace.Tracer {
	if p == nil || p.tp == nil {
		return nil
	}
	return p.tp.Tracer("github.com/toolguard/toolguard")
}

// Shutdown exports the spans still queued and stops the exporter, within
// ctx: what is still queued when ctx ends is lost. It does nothing for a
// provider that traces nothing.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil || p.tp == nil {
		return nil
	}
	if err := p.tp.Shutdown(ctx); err != nil {
		return fmt.Errorf("shut down tracing: %w", err)
	}
	return nil
}
