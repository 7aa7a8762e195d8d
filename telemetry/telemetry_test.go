package telemetry

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolguard/toolguard/config"
	"github.com/toolguard/toolguard/telemetry/telemetrytest"
)

func TestOffWithoutEndpoint(t *testing.T) {
	reg := prometheus.NewRegistry()
	p, err := New(Settings{ServiceName: "x", Sampler: "always_on"}, Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	if tr := p.Tracer(); tr != nil {
		t.Errorf("Tracer() = %v, want nil with no endpoint", tr)
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	const dropped = "toolguard_trace_spans_dropped_total"
	if n, err := testutil.GatherAndCount(reg, dropped); err != nil || n != 1 {
		t.Errorf("%s series = %d (%v), want 1 even when off", dropped, n, err)
	}
	var nilP *Provider
	if nilP.Tracer() != nil || nilP.Shutdown(context.Background()) != nil {
		t.Error("a nil Provider traces something")
	}
}

func TestExportsToCollector(t *testing.T) {
	tests := []struct {
		name     string
		settings func(url string) Settings
		service  string
	}{
		{name: "protobuf, base endpoint", settings: func(u string) Settings { return Settings{Endpoint: u} }, service: "toolguard"},
		{name: "base endpoint with slash", settings: func(u string) Settings { return Settings{Endpoint: u + "/", ServiceName: "billing-proxy"} }, service: "billing-proxy"},
		{name: "json, traces endpoint", settings: func(u string) Settings {
			return Settings{Endpoint: "http://127.0.0.1:1", TracesEndpoint: u + "/v1/traces", Protocol: ProtocolJSON}
		}, service: "toolguard"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			col := telemetrytest.New(t)
			reg := prometheus.NewRegistry()
			p, err := New(tc.settings(col.URL), Options{Version: "v9.9.9", Registerer: reg})
			if err != nil {
				t.Fatal(err)
			}
			_, span := p.Tracer().Start(context.Background(), "POST create_invoice", trace.WithSpanKind(trace.SpanKindServer))
			span.End()
			if err := p.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			got := col.WaitFor(t, 10*time.Second, "the span", func(s []telemetrytest.Span) bool { return len(s) == 1 })[0]
			if got.Name != "POST create_invoice" || got.Kind != "Server" {
				t.Errorf("span = %s %q, want Server \"POST create_invoice\"", got.Kind, got.Name)
			}
			if got.Resource["service.name"] != tc.service || got.Resource["service.version"] != "v9.9.9" {
				t.Errorf("resource = %v, want service.name %s and service.version v9.9.9", got.Resource, tc.service)
			}
			if v := testutil.ToFloat64(p.queue.dropped); v != 0 {
				t.Errorf("dropped = %v, want 0", v)
			}
		})
	}
}

// A dead collector costs the spans and nothing else: every failed batch
// is counted, and ending spans never waits for it.
func TestDeadCollectorCountsDrops(t *testing.T) {
	t.Setenv("OTEL_BSP_EXPORT_TIMEOUT", "200") // ms: each failed export ends soon
	reg := prometheus.NewRegistry()
	p, err := New(Settings{Endpoint: "http://" + closedAddr(t)}, Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(context.Background())
	const n = 10
	for range n {
		_, span := p.Tracer().Start(context.Background(), "x")
		span.End()
	}
	// ForceFlush returns once the batch was tried, and failed.
	if err := p.tp.ForceFlush(context.Background()); err == nil {
		t.Fatal("ForceFlush to a closed port succeeded")
	}
	if v := testutil.ToFloat64(p.queue.dropped); v != n {
		t.Errorf("dropped = %v, want %d", v, n)
	}
}

// closedAddr is a 127.0.0.1 address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// stuck is a processor whose OnEnd blocks until release is closed; entered
// is closed when the first OnEnd starts.
type stuck struct {
	entered, release chan struct{}
	once             sync.Once
	mu               sync.Mutex
	got              int
}

func (s *stuck) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (s *stuck) OnEnd(sdktrace.ReadOnlySpan) {
	s.once.Do(func() { close(s.entered) })
	<-s.release
	s.mu.Lock()
	s.got++
	s.mu.Unlock()
}
func (s *stuck) Shutdown(context.Context) error   { return nil }
func (s *stuck) ForceFlush(context.Context) error { return nil }

func TestQueueDropsWhenFull(t *testing.T) {
	next := &stuck{entered: make(chan struct{}), release: make(chan struct{})}
	dropped := prometheus.NewCounter(prometheus.CounterOpts{Name: "d"})
	q := newQueue(next, 2, dropped)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(q))
	tr := tp.Tracer("t")
	end := func() {
		_, s := tr.Start(context.Background(), "x")
		s.End()
	}
	end()
	<-next.entered // the first span is in the stuck processor
	const more = 10
	for range more {
		end() // never waits: two are queued, the rest dropped
	}
	if v := testutil.ToFloat64(dropped); v != more-2 {
		t.Errorf("dropped = %v, want %d", v, more-2)
	}
	close(next.release)
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if next.got != 3 {
		t.Errorf("the next processor got %d spans, want 3", next.got)
	}
	// An unsampled span is neither queued nor dropped.
	tp2 := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()), sdktrace.WithSpanProcessor(newQueue(tracetestProcessor(), 1, dropped)))
	_, s := tp2.Tracer("t").Start(context.Background(), "x")
	s.End()
	if v := testutil.ToFloat64(dropped); v != more-2 {
		t.Errorf("dropped after an unsampled span = %v, want %d", v, more-2)
	}
}

func tracetestProcessor() sdktrace.SpanProcessor {
	return sdktrace.NewSimpleSpanProcessor(tracetest.NewInMemoryExporter())
}

// A queue whose next processor is stuck still shuts down within its
// deadline.
func TestQueueShutdownDeadline(t *testing.T) {
	next := &stuck{entered: make(chan struct{}), release: make(chan struct{})}
	defer close(next.release)
	q := newQueue(next, 4, prometheus.NewCounter(prometheus.CounterOpts{Name: "d"}))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(q))
	_, s := tp.Tracer("t").Start(context.Background(), "x")
	s.End()
	<-next.entered
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := tp.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown = %v, want context.Canceled", err)
	}
}

func TestSampler(t *testing.T) {
	tests := []struct {
		name, arg string
		want      string // Description(); "" for an error
		err       string
	}{
		{name: "", want: "ParentBased{root:AlwaysOnSampler"},
		{name: "always_on", want: "AlwaysOnSampler"},
		{name: "ALWAYS_OFF", want: "AlwaysOffSampler"},
		{name: "traceidratio", arg: "0.25", want: "TraceIDRatioBased{0.25}"},
		{name: "traceidratio", want: "TraceIDRatioBased{1}"},
		{name: "parentbased_traceidratio", arg: " 0.5 ", want: "ParentBased{root:TraceIDRatioBased{0.5}"},
		{name: "parentbased_always_off", want: "ParentBased{root:AlwaysOffSampler"},
		{name: "traceidratio", arg: "1.5", err: `invalid sampler argument "1.5": want a ratio from 0 to 1`},
		{name: "traceidratio", arg: "half", err: `invalid sampler argument "half"`},
		{name: "jaeger_remote", err: `unsupported sampler "jaeger_remote"`},
	}
	for _, tc := range tests {
		t.Run(tc.name+"/"+tc.arg, func(t *testing.T) {
			s, err := newSampler(tc.name, tc.arg)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Description(); !strings.HasPrefix(got, tc.want) {
				t.Errorf("sampler = %s, want %s", got, tc.want)
			}
		})
	}
}

// Every sampler config accepts is one New builds.
func TestSamplersMatchConfig(t *testing.T) {
	for _, name := range config.TelemetrySamplers {
		if _, err := newSampler(name, "0.5"); err != nil {
			t.Errorf("config accepts %s: %v", name, err)
		}
	}
}

func TestNewRefuses(t *testing.T) {
	tests := []struct {
		name string
		s    Settings
		want error
	}{
		{name: "grpc", s: Settings{Endpoint: "http://127.0.0.1:4317", Protocol: "grpc"}, want: errProtocol},
		{name: "sampler", s: Settings{Endpoint: "http://127.0.0.1:4318", Sampler: "xray"}, want: errSampler},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.s, Options{}); !errors.Is(err, tc.want) {
				t.Errorf("New = %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := New(Settings{Endpoint: "collector:4318"}, Options{}); err == nil {
		t.Error("New took an endpoint without a scheme")
	}
}

// The exporter ignores the proxy variables: a sidecar's may name
// toolguard itself.
func TestExporterIgnoresProxyVariables(t *testing.T) {
	col := telemetrytest.New(t)
	proxied := make(chan struct{}, 1)
	trap := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case proxied <- struct{}{}:
		default:
		}
		http.Error(w, "no", http.StatusForbidden)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go trap.Serve(ln)
	defer trap.Close()
	t.Setenv("HTTP_PROXY", "http://"+ln.Addr().String())
	t.Setenv("NO_PROXY", "")
	p, err := New(Settings{Endpoint: col.URL}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, s := p.Tracer().Start(context.Background(), "x")
	s.End()
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(col.Spans()) != 1 {
		t.Errorf("collector got %d spans, want 1", len(col.Spans()))
	}
	select {
	case <-proxied:
		t.Error("the exporter went through HTTP_PROXY")
	default:
	}
}
