package telemetry

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// defaultQueueSize is the number of ended spans the queue holds for the
// batch processor, the size of the SDK's own queue.
const defaultQueueSize = 2048

// queue is the span processor spans end into. It holds them, up to its
// size, for the next processor (a batch processor), which one goroutine of
// its own feeds: OnEnd never waits, and a span that finds the queue full is
// dropped and counted. The batch processor may then block (WithBlocking):
// it holds up only that goroutine, and the count stays exact.
type queue struct {
	next    sdktrace.SpanProcessor
	items   chan item
	dropped prometheus.Counter
	stop    chan struct{}
	stopped sync.Once
	done    chan struct{}
}

// item is an ended span, or a ForceFlush's marker (span nil).
type item struct {
	span    sdktrace.ReadOnlySpan
	flushed chan struct{}
}

var _ sdktrace.SpanProcessor = (*queue)(nil)

func newQueue(next sdktrace.SpanProcessor, size int, dropped prometheus.Counter) *queue {
	if size <= 0 {
		size = defaultQueueSize
	}
	q := &queue{next: next, items: make(chan item, size), dropped: dropped, stop: make(chan struct{}), done: make(chan struct{})}
	go q.run()
	return q
}

// OnStart does nothing: spans are handed on when they end.
func (q *queue) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd queues a sampled span without waiting; it drops and counts the
// span when the queue is full.
func (q *queue) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	select {
	case q.items <- item{span: s}:
	default:
		q.dropped.Inc()
	}
}

// run feeds the next processor until Shutdown, then hands it what is left.
func (q *queue) run() {
	defer close(q.done)
	for {
		select {
		case it := <-q.items:
			q.pass(it)
		case <-q.stop:
			for {
				select {
				case it := <-q.items:
					q.pass(it)
				default:
					return
				}
			}
		}
	}
}

func (q *queue) pass(it item) {
	if it.flushed != nil {
		close(it.flushed)
		return
	}
	q.next.OnEnd(it.span)
}

// ForceFlush hands the next processor every span queued before it, then
// flushes it, within ctx.
func (q *queue) ForceFlush(ctx context.Context) error {
	flushed := make(chan struct{})
	select {
	case q.items <- item{flushed: flushed}:
	case <-q.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-flushed:
	case <-q.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	return q.next.ForceFlush(ctx)
}

// Shutdown hands the next processor the spans still queued and shuts it
// down, within ctx.
func (q *queue) Shutdown(ctx context.Context) error {
	q.stopped.Do(func() { close(q.stop) })
	var err error
	select {
	case <-q.done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	return errors.Join(err, q.next.Shutdown(ctx))
}

// warnEvery is the least time between two warnings of failed exports.
const warnEvery = time.Minute

// countingExporter counts the spans of every batch its exporter failed to
// deliver as dropped, and warns of the failures, rate-limited.
type countingExporter struct {
	sdktrace.SpanExporter
	dropped  prometheus.Counter
	log      *slog.Logger
	lastWarn atomic.Int64 // unix nanoseconds; 0 before the first warning
}

// ExportSpans exports spans, counting them as dropped when it fails.
func (e *countingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := e.SpanExporter.ExportSpans(ctx, spans)
	if err != nil {
		e.dropped.Add(float64(len(spans)))
		e.warn(err, len(spans))
	}
	return err
}

func (e *countingExporter) warn(err error, n int) {
	now := time.Now().UnixNano()
	last := e.lastWarn.Load()
	if last != 0 && now-last < int64(warnEvery) || !e.lastWarn.CompareAndSwap(last, now) {
		return
	}
	e.log.Warn("telemetry: spans were not exported (the collector did not take them); toolguard_trace_spans_dropped_total counts them, and this is logged at most once a minute",
		slog.Int("spans", n), slog.Any("error", err))
}
