package wirewatch

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolguard/toolguard/lifecycle"
)

// ErrLeaseLapsed is an attempt refused because the claim's lease ended
// before the request was written; nothing was sent.
var ErrLeaseLapsed = errors.New("the claim's lease ended before the call was sent (the process stalled or the journal answered late); nothing was sent")

// ErrTransportResend is a second connection of one attempt refused: the
// transport tried to re-send the request on its own.
var ErrTransportResend = errors.New("the transport tried to re-send the call on a new connection; toolguard decides every send")

// Wire watches one upstream attempt on its way to the wire: it refuses the
// connection when the lease has ended by the time the transport hands it
// over (closing it before a byte of the request is written), refuses a
// second connection (the transport re-sending on its own: toolguard
// decides every send), and cancels the attempt when the lease ends before
// the request was written whole. Make one with Watch.
type Wire struct {
	lease   *lifecycle.Lease
	cancel  context.CancelCauseFunc
	traced  atomic.Bool  // the transport reports its connections
	conns   atomic.Int32 // connections handed over
	refused atomic.Bool  // a connection was closed before writing
	wrote   atomic.Bool  // the request was written whole
	ended   atomic.Bool  // the round trip returned: later requests on the context are not this attempt

	mu    sync.Mutex
	timer *time.Timer
	done  bool
}

// Watch returns ctx with the attempt's trace and cancellation, and the
// Wire that watches it; Stop must be called once the round trip returned.
// A nil lease never ends: the Wire then only refuses re-sends.
func Watch(ctx context.Context, lease *lifecycle.Lease) (context.Context, *Wire) {
	ctx, cancel := context.WithCancelCause(ctx)
	w := &Wire{lease: lease, cancel: cancel}
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GetConn: func(string) { w.traced.Store(true) },
		GotConn: w.gotConn,
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil {
				w.wrote.Store(true)
			}
		},
	})
	if lease != nil {
		w.capWrite()
	}
	return ctx, w
}

func (w *Wire) gotConn(info httptrace.GotConnInfo) {
	if w.ended.Load() {
		return // a later request on the same context (an SSE resume)
	}
	// GotConn runs before the transport queues the request for writing.
	// On HTTP/1 closing the connection here means nothing of the request
	// is written; HTTP/2 checks the context before it writes the headers,
	// and its connection carries other calls, so it is left open.
	h2 := negotiated(info.Conn) == "h2"
	n := w.conns.Add(1)
	switch {
	case n > 1 && !h2 && w.wrote.Load():
		// net/http re-sending a request it wrote whole; a request of
		// which nothing was written may go again, on a new connection.
		info.Conn.Close()
		w.cancel(ErrTransportResend)
	case !w.lease.Holds(time.Now()):
		w.refused.Store(true)
		if !h2 {
			info.Conn.Close()
		}
		w.cancel(ErrLeaseLapsed)
	}
}

// negotiated is the application protocol a TLS connection agreed on; ""
// for a plain one.
func negotiated(c net.Conn) string {
	if t, ok := c.(interface{ ConnectionState() tls.ConnectionState }); ok {
		return t.ConnectionState().NegotiatedProtocol
	}
	return ""
}

// capWrite cancels the attempt at the lease's end unless the request was
// written whole by then; renewals move the end.
func (w *Wire) capWrite() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return
	}
	if w.wrote.Load() {
		return
	}
	now := time.Now()
	if !w.lease.Holds(now) {
		w.cancel(ErrLeaseLapsed)
		return
	}
	w.timer = time.AfterFunc(w.lease.Until().Sub(now), w.capWrite)
}

// Stop ends the watch; the attempt's context stays usable for its body.
func (w *Wire) Stop() {
	w.ended.Store(true)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.done = true
	if w.timer != nil {
		w.timer.Stop()
	}
}

// End stops the watch and cancels the attempt's context.
func (w *Wire) End() { w.Stop(); w.cancel(context.Canceled) }

// Sent reports whether a failed attempt may have reached the upstream: a
// connection was handed over and not refused before writing, or — for a
// transport that reports no trace — anything but a dial error.
func (w *Wire) Sent(err error) bool {
	switch n := w.conns.Load(); {
	case n == 1 && w.refused.Load():
		return false
	case n > 0:
		return true
	case w.traced.Load():
		return false // it looked for a connection and got none
	}
	return !IsDialError(err)
}

// Cause is the reason an attempt on ctx (a context of Watch) failed with
// err: the Wire's refusal (ErrLeaseLapsed, ErrTransportResend) wrapped
// with err when it cancelled the attempt, else err.
func Cause(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); errors.Is(cause, ErrLeaseLapsed) || errors.Is(cause, ErrTransportResend) {
		return fmt.Errorf("%w (%v)", cause, err)
	}
	return err
}

// NoTransportResend makes the transport unable to re-send req on its own
// after a broken connection: net/http re-sends a request it deems
// replayable (a GetBody, or no body at all, and an idempotent method or
// an Idempotency-Key header) once, on a new connection. Without GetBody a
// request with a body is never replayable. For one without (empty), the
// idempotency headers go under a non-canonical name (header names are
// case-insensitive on the wire, and servers canonicalise them), and a
// method net/http would re-send anyway gets an empty reader, which it
// probes and sends as no body. The Wire refuses any second connection
// that slips through.
func NoTransportResend(req *http.Request, empty bool) {
	req.GetBody = nil
	if !empty {
		return
	}
	for _, name := range []string{"Idempotency-Key", "X-Idempotency-Key"} {
		if v, ok := req.Header[name]; ok {
			delete(req.Header, name)
			req.Header[lowerASCII(name)] = v
		}
	}
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		req.Body = emptyBody{}
	}
}

// emptyBody is a body with nothing in it that net/http cannot tell from a
// stream until it reads it.
type emptyBody struct{}

func (emptyBody) Read([]byte) (int, error) { return 0, io.EOF }
func (emptyBody) Close() error             { return nil }

func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// IsDialError reports an error of connecting, before anything was sent.
func IsDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
