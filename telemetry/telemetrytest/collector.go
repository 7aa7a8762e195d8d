package telemetrytest

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

// Span is one received span, its attributes as text.
type Span struct {
	Name string
	// Kind is "Server", "Client", "Internal", "Producer" or "Consumer".
	Kind                          string
	TraceID, SpanID, ParentSpanID string // lowercase hex; ParentSpanID "" for a root
	Attrs                         map[string]string
	// Resource are the attributes of the span's resource (service.name).
	Resource map[string]string
	// Status is "Unset", "Ok" or "Error".
	Status string
}

// Collector is an OTLP/HTTP receiver of traces. Its zero value is not
// usable: see New.
type Collector struct {
	// URL is the collector's base URL, for OTEL_EXPORTER_OTLP_ENDPOINT;
	// spans are received at URL/v1/traces.
	URL string

	mu      sync.Mutex
	spans   []Span
	arrived chan struct{} // closed and replaced when spans arrive
	bad     []string
}

// New starts a collector on 127.0.0.1, closed when the test ends. A request
// it cannot decode fails the test.
func New(t testing.TB) *Collector {
	t.Helper()
	c := &Collector{arrived: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(c.receive))
	t.Cleanup(func() {
		srv.Close()
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, b := range c.bad {
			t.Errorf("collector: %s", b)
		}
	})
	c.URL = srv.URL
	return c
}

func (c *Collector) receive(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
		c.reject(w, "unexpected request "+r.Method+" "+r.URL.Path)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			c.reject(w, "gzip: "+err.Error())
			return
		}
		body = zr
	}
	data, err := io.ReadAll(body)
	if err != nil {
		c.reject(w, "read: "+err.Error())
		return
	}
	req := ptraceotlp.NewExportRequest()
	json := strings.HasPrefix(r.Header.Get("Content-Type"), "application/json")
	if json {
		err = req.UnmarshalJSON(data)
	} else {
		err = req.UnmarshalProto(data)
	}
	if err != nil {
		c.reject(w, "decode: "+err.Error())
		return
	}
	c.add(spansOf(req.Traces()))
	// An empty ExportTraceServiceResponse: full success.
	if json {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, "{}")
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

func (c *Collector) reject(w http.ResponseWriter, why string) {
	c.mu.Lock()
	c.bad = append(c.bad, why)
	c.mu.Unlock()
	http.Error(w, why, http.StatusBadRequest)
}

func (c *Collector) add(spans []Span) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.spans = append(c.spans, spans...)
	close(c.arrived)
	c.arrived = make(chan struct{})
}

// Spans returns the spans received so far, in order of arrival.
func (c *Collector) Spans() []Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.spans)
}

// WaitFor waits, up to timeout, until the spans received satisfy done,
// and returns them; it fails the test when they never do. It wakes up when
// spans arrive, never on a timer.
func (c *Collector) WaitFor(t testing.TB, timeout time.Duration, what string, done func([]Span) bool) []Span {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		spans, arrived := slices.Clone(c.spans), c.arrived
		c.mu.Unlock()
		if done(spans) {
			return spans
		}
		select {
		case <-arrived:
		case <-deadline.C:
			t.Fatalf("collector: %s never arrived; received %d spans:\n%s", what, len(spans), Dump(spans))
		}
	}
}

// Dump renders spans one a line, for failure messages.
func Dump(spans []Span) string {
	var b strings.Builder
	for _, s := range spans {
		b.WriteString("  " + s.Kind + " " + s.Name + " trace=" + s.TraceID + " span=" + s.SpanID + " parent=" + s.ParentSpanID)
		keys := make([]string, 0, len(s.Attrs))
		for k := range s.Attrs {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			b.WriteString(" " + k + "=" + s.Attrs[k])
		}
		b.WriteString("\n")
	}
	return b.String()
}

func spansOf(td ptrace.Traces) []Span {
	var out []Span
	rss := td.ResourceSpans()
	for i := range rss.Len() {
		rs := rss.At(i)
		res := text(rs.Resource().Attributes())
		sss := rs.ScopeSpans()
		for j := range sss.Len() {
			spans := sss.At(j).Spans()
			for k := range spans.Len() {
				s := spans.At(k)
				sp := Span{
					Name:     s.Name(),
					Kind:     s.Kind().String(),
					TraceID:  s.TraceID().String(),
					SpanID:   s.SpanID().String(),
					Attrs:    text(s.Attributes()),
					Resource: res,
					Status:   s.Status().Code().String(),
				}
				if !s.ParentSpanID().IsEmpty() {
					sp.ParentSpanID = s.ParentSpanID().String()
				}
				out = append(out, sp)
			}
		}
	}
	return out
}

func text(m pcommon.Map) map[string]string {
	out := make(map[string]string, m.Len())
	for k, v := range m.All() {
		out[k] = v.AsString()
	}
	return out
}
