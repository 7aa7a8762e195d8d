package wirewatch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolguard/toolguard/lifecycle"
)

// Connecting is capped to the lease's end: a dial that outlasts it is
// abandoned, nothing is sent, and the attempt counts as not sent.
func TestWireCapsTheDialToTheLease(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { requests.Add(1) }))
	defer srv.Close()
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		time.Sleep(150 * time.Millisecond) // the fault: a dial slower than the lease
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	defer tr.CloseIdleConnections()
	lease := lifecycle.NewLease(time.Now(), 100*time.Millisecond)
	ctx, w := Watch(context.Background(), lease)
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL, strings.NewReader(`{"a":1}`))
	NoTransportResend(req, false)
	_, err := tr.RoundTrip(req)
	w.Stop()
	if err == nil || !errors.Is(Cause(ctx, err), ErrLeaseLapsed) {
		t.Fatalf("round trip after the lease: %v, want ErrLeaseLapsed", err)
	}
	if w.Sent(err) {
		t.Fatal("a connection closed before writing counted as sent")
	}
	if got := requests.Load(); got != 0 {
		t.Fatalf("server got %d requests, want 0", got)
	}
}

// Connecting and writing are capped to the lease's end: a request still
// being written when the lease ends (a provider that stopped reading) is
// cancelled, and counts as possibly sent.
func TestWireCapsTheWriteToTheLease(t *testing.T) {
	stuck := make(chan struct{})
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		<-stuck // reads no body: the client's write blocks once the buffers fill
	}))
	defer srv.Close()
	defer close(stuck)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	lease := lifecycle.NewLease(time.Now(), time.Second)
	ctx, w := Watch(context.Background(), lease)
	body := bytes.Repeat([]byte("x"), 64<<20)
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL, bytes.NewReader(body))
	NoTransportResend(req, false)
	done := make(chan error, 1)
	go func() { _, err := tr.RoundTrip(req); done <- err }()
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the write outlived its lease")
	}
	w.Stop()
	if !errors.Is(Cause(ctx, err), ErrLeaseLapsed) {
		t.Fatalf("round trip = %v, want it cancelled at the lease's end", err)
	}
	// What the provider saw is not the client's to know: under load the
	// server may read the headers only after the connection is gone, and
	// then never runs its handler. What matters is that the attempt counts
	// as possibly sent, and was not sent twice.
	if !w.Sent(err) {
		t.Fatal("a partly written request must count as possibly sent")
	}
	if n := requests.Load(); n > 1 {
		t.Fatalf("server got %d requests, want at most 1", n)
	}
}

// The last check is made when the transport hands the connection over,
// immediately before the request is written: after the lease, the
// connection is closed (nothing of the request is written) and the
// attempt counts as not sent. A second connection of one attempt, after
// the request was written whole, is the transport re-sending on its own:
// refused the same way.
func TestWireChecksTheLeaseOnTheConnection(t *testing.T) {
	lapsed := lifecycle.NewLease(time.Now().Add(-time.Hour), time.Second)
	_, w := Watch(context.Background(), nil)
	w.lease = lapsed
	c1, c2 := net.Pipe()
	defer c2.Close()
	w.gotConn(httptrace.GotConnInfo{Conn: c1})
	if _, err := c1.Write([]byte("x")); err == nil {
		t.Fatal("the connection was not closed")
	}
	if w.Sent(errors.New("closed")) {
		t.Fatal("a refused connection counted as sent")
	}

	_, w = Watch(context.Background(), lifecycle.NewLease(time.Now(), time.Hour))
	a1, a2 := net.Pipe()
	defer a2.Close()
	w.gotConn(httptrace.GotConnInfo{Conn: a1})
	w.wrote.Store(true)
	b1, b2 := net.Pipe()
	defer b2.Close()
	w.gotConn(httptrace.GotConnInfo{Conn: b1})
	if _, err := b1.Write([]byte("x")); err == nil {
		t.Fatal("a re-send's connection was not closed")
	}
	w.Stop()
}

func TestNoTransportResend(t *testing.T) {
	for _, tc := range []struct {
		name      string
		method    string
		empty     bool
		header    http.Header
		wantEmpty bool // the body becomes an emptyBody
		wantKeys  []string
	}{
		{name: "body", method: http.MethodPost, header: http.Header{"Idempotency-Key": {"k"}}, wantKeys: []string{"Idempotency-Key"}},
		{name: "empty POST", method: http.MethodPost, empty: true,
			header: http.Header{"Idempotency-Key": {"k"}, "X-Idempotency-Key": {"x"}}, wantKeys: []string{"idempotency-key", "x-idempotency-key"}},
		{name: "empty GET", method: http.MethodGet, empty: true, header: http.Header{}, wantEmpty: true},
		{name: "empty default method", method: "", empty: true, header: http.Header{}, wantEmpty: true},
		{name: "empty HEAD", method: http.MethodHead, empty: true, header: http.Header{}, wantEmpty: true},
		{name: "empty OPTIONS", method: http.MethodOptions, empty: true, header: http.Header{}, wantEmpty: true},
		{name: "empty TRACE", method: http.MethodTrace, empty: true, header: http.Header{}, wantEmpty: true},
		{name: "empty DELETE", method: http.MethodDelete, empty: true, header: http.Header{"Idempotency-Key": {"k"}}, wantKeys: []string{"idempotency-key"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := &http.Request{Method: tc.method, Header: tc.header, GetBody: func() (io.ReadCloser, error) { return http.NoBody, nil }}
			NoTransportResend(req, tc.empty)
			if req.GetBody != nil {
				t.Error("GetBody kept: the transport may re-send")
			}
			if _, got := req.Body.(emptyBody); got != tc.wantEmpty {
				t.Errorf("body %T, want an emptyBody: %v", req.Body, tc.wantEmpty)
			}
			var keys []string
			for k := range req.Header {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			if !slices.Equal(keys, tc.wantKeys) {
				t.Errorf("header names %q, want %q", keys, tc.wantKeys)
			}
		})
	}
	var b emptyBody
	if n, err := b.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Errorf("emptyBody.Read = %d, %v; want 0, EOF", n, err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("emptyBody.Close = %v", err)
	}
}

// An empty call keeps its idempotency header for the upstream: the name
// only loses its canonical spelling, which the server restores.
func TestNoTransportResendKeepsTheHeaderOnTheWire(t *testing.T) {
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got <- r.Header.Get("Idempotency-Key") }))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	req.Header.Set("Idempotency-Key", "k1")
	NoTransportResend(req, true)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if v := <-got; v != "k1" {
		t.Fatalf("upstream got Idempotency-Key %q, want k1", v)
	}
}

func TestIsDialError(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{name: "dial", err: &net.OpError{Op: "dial", Err: errors.New("refused")}, want: true},
		{name: "wrapped dial", err: fmt.Errorf("post: %w", &net.OpError{Op: "dial", Err: errors.New("refused")}), want: true},
		{name: "read", err: &net.OpError{Op: "read", Err: errors.New("reset")}},
		{name: "other", err: errors.New("EOF")},
		{name: "nil"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsDialError(tc.err); got != tc.want {
				t.Errorf("IsDialError(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

// Sent without a trace (a transport that reports no connection) counts
// anything but a dial error as possibly sent; with one, a connection
// sought and not got as not sent.
func TestSentWithoutConnections(t *testing.T) {
	dialErr := &net.OpError{Op: "dial", Err: errors.New("refused")}
	for _, tc := range []struct {
		name   string
		traced bool
		err    error
		want   bool
	}{
		{name: "untraced dial error", err: dialErr},
		{name: "untraced other error", err: errors.New("reset"), want: true},
		{name: "traced, no connection", traced: true, err: errors.New("reset")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, w := Watch(context.Background(), nil)
			defer w.End()
			w.traced.Store(tc.traced)
			if got := w.Sent(tc.err); got != tc.want {
				t.Errorf("Sent(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

func TestCause(t *testing.T) {
	plain := errors.New("reset")
	ctx, w := Watch(context.Background(), nil)
	if got := Cause(ctx, plain); got != plain {
		t.Errorf("Cause before a refusal = %v, want the error itself", got)
	}
	w.End()
	if got := Cause(ctx, plain); got != plain {
		t.Errorf("Cause after End = %v, want the error itself", got)
	}
	ctx, w = Watch(context.Background(), lifecycle.NewLease(time.Now().Add(-time.Hour), time.Second))
	defer w.End()
	if got := Cause(ctx, plain); !errors.Is(got, ErrLeaseLapsed) || !strings.Contains(got.Error(), "reset") {
		t.Errorf("Cause after a lapsed lease = %v, want ErrLeaseLapsed with the error", got)
	}
}

// A connection handed over after the round trip returned belongs to a
// later request on the same context (an SSE resume): it is let be.
func TestWireIgnoresConnectionsAfterStop(t *testing.T) {
	_, w := Watch(context.Background(), lifecycle.NewLease(time.Now(), time.Hour))
	w.Stop()
	w.lease = lifecycle.NewLease(time.Now().Add(-time.Hour), time.Second)
	c1, c2 := net.Pipe()
	defer c1.Close()
	defer c2.Close()
	w.gotConn(httptrace.GotConnInfo{Conn: c1})
	go io.Copy(io.Discard, c2)
	if _, err := c1.Write([]byte("x")); err != nil {
		t.Fatalf("the connection was closed after Stop: %v", err)
	}
	if w.conns.Load() != 0 {
		t.Error("a connection after Stop was counted")
	}
}

// The write cap follows a renewal: a lease extended before its end keeps
// the attempt going past the first end.
func TestWireFollowsRenewals(t *testing.T) {
	lease := lifecycle.NewLease(time.Now(), 100*time.Millisecond)
	ctx, w := Watch(context.Background(), lease)
	defer w.End()
	lease.Extend(time.Now(), time.Hour)
	time.Sleep(300 * time.Millisecond)
	if err := context.Cause(ctx); err != nil {
		t.Fatalf("the attempt was cancelled after a renewal: %v", err)
	}
}

// Over HTTP/2 a connection found after the lease is left open (it
// carries other calls) and the attempt is cancelled before its headers
// are written.
func TestWireLeavesAnHTTP2ConnectionOpen(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { requests.Add(1) }))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	client := srv.Client()
	warm, err := client.Get(srv.URL) // an open h2 connection to reuse
	if err != nil {
		t.Fatal(err)
	}
	warm.Body.Close()
	if warm.ProtoMajor != 2 {
		t.Skipf("the test server spoke %s, not HTTP/2", warm.Proto)
	}
	ctx, w := Watch(context.Background(), lifecycle.NewLease(time.Now(), time.Hour))
	w.lease = lifecycle.NewLease(time.Now().Add(-time.Hour), time.Second) // lapsed when the connection is handed over
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader("x"))
	NoTransportResend(req, false)
	_, err = client.Do(req)
	w.Stop()
	if !errors.Is(Cause(ctx, err), ErrLeaseLapsed) || w.Sent(err) {
		t.Fatalf("round trip = %v, sent %v; want ErrLeaseLapsed, not sent", err, w.Sent(err))
	}
	if got := requests.Load(); got != 1 {
		t.Fatalf("server got %d requests, want only the warm-up", got)
	}
	again, err := client.Get(srv.URL)
	if err != nil {
		t.Fatalf("the shared connection was closed: %v", err)
	}
	again.Body.Close()
}
