package hijack

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync"
)

// WithReader returns c with its reads taken from r, which holds the bytes
// peeked (or buffered) from c before it was handed on, then c's own.
func WithReader(c net.Conn, r io.Reader) net.Conn { return &readerConn{Conn: c, r: r} }

// readerConn is a connection whose reads come from r.
type readerConn struct {
	net.Conn
	r io.Reader
}

func (c *readerConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// Listener hands one connection to an http.Server, then blocks Accept
// until that connection is closed, so that Serve lasts as long as the
// hijacked connection. Make one with NewListener.
type Listener struct {
	conn   net.Conn // the hijacked connection, closing which ends Serve
	next   chan net.Conn
	closed chan struct{}
	once   sync.Once
}

// NewListener returns a Listener for the hijacked connection c. Serve the
// connection Conn returns (or one wrapping it, such as a tls.Server) by
// handing it to Offer.
func NewListener(c net.Conn) *Listener {
	l := &Listener{next: make(chan net.Conn, 1), closed: make(chan struct{})}
	l.conn = &notifyConn{Conn: c, l: l}
	return l
}

// Conn is the hijacked connection, wrapped so that closing it ends the
// Listener.
func (l *Listener) Conn() net.Conn { return l.conn }

// Offer makes c the connection Accept returns. It must be called once.
func (l *Listener) Offer(c net.Conn) { l.next <- c }

// Accept returns the offered connection, then blocks until the hijacked
// connection is closed and returns net.ErrClosed.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.next:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// Close does nothing: the Listener ends when its connection is closed.
func (l *Listener) Close() error { return nil }

// Addr is the hijacked connection's local address.
func (l *Listener) Addr() net.Addr { return l.conn.LocalAddr() }

// notifyConn tells its listener when it is closed.
type notifyConn struct {
	net.Conn
	l *Listener
}

func (c *notifyConn) Close() error {
	c.l.once.Do(func() { close(c.l.closed) })
	return c.Conn.Close()
}

// Buffered is a ResponseWriter whose Hijack hands over the bytes the HTTP
// server read ahead (a ClientHello sent in the same write as a CONNECT)
// as the start of the connection: a caller given only the bare
// connection, as goproxy's ConnectHijack is, would lose them.
type Buffered struct {
	http.ResponseWriter
	// Hijacker is the ResponseWriter's own Hijack.
	Hijacker http.Hijacker
}

// Hijack implements http.Hijacker. A TCP connection stays one that can
// close its halves (CloseRead, CloseWrite), for a tunnel's copy.
func (b Buffered) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := b.Hijacker.Hijack()
	if err != nil || rw.Reader.Buffered() == 0 {
		return c, rw, err
	}
	var wrapped net.Conn = &readerConn{Conn: c, r: rw.Reader}
	if tc, ok := c.(*net.TCPConn); ok {
		// Keep half-closes for goproxy's tunnel copy.
		wrapped = &readerTCPConn{TCPConn: tc, r: rw.Reader}
	}
	return wrapped, bufio.NewReadWriter(bufio.NewReader(wrapped), rw.Writer), nil
}

// readerTCPConn is readerConn for a TCP connection, keeping CloseRead and
// CloseWrite.
type readerTCPConn struct {
	*net.TCPConn
	r io.Reader
}

func (c *readerTCPConn) Read(p []byte) (int, error) { return c.r.Read(p) }
