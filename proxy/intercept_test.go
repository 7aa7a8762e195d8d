package proxy

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/netutil"

	"github.com/toolguard/toolguard/internal/hijack"
	"github.com/toolguard/toolguard/policy"
)

// countingListener counts the bytes read from every connection it accepts.
type countingListener struct {
	net.Listener
	read atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, n: &l.read}, nil
}

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// CloseWrite and CloseRead keep goproxy's half-closes working.
func (c *countingConn) CloseWrite() error { return c.Conn.(*net.TCPConn).CloseWrite() }
func (c *countingConn) CloseRead() error  { return c.Conn.(*net.TCPConn).CloseRead() }

// interceptedTunnel opens a CONNECT to target that the proxy intercepts
// and returns the TLS connection inside it.
func (p *netProxy) interceptedTunnel(t *testing.T, target string) *tls.Conn {
	t.Helper()
	resp, conn, br := p.connect(t, target)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT %s: %d, want 200", target, resp.StatusCode)
	}
	host, _, _ := net.SplitHostPort(target)
	tc := tls.Client(hijack.WithReader(conn, br), &tls.Config{RootCAs: p.roots, ServerName: host})
	if err := tc.Handshake(); err != nil {
		t.Fatalf("TLS inside the tunnel: %v", err)
	}
	return tc
}

// tunnelOpts intercepts every tunnel (unmatched calls guarded).
func tunnelOpts(o Options) Options {
	o.Unmatched = policy.UnmatchedGuard
	return o
}

// Regression: the header block of a request inside an intercepted tunnel
// was read whole before max_header_bytes was checked; four 500 MiB blocks
// took toolguard from 100 MB to 3.5 GB. The read is now bounded as it
// happens: an endless header block gets 431 after about max_header_bytes.
func TestTunnelHeaderBlockBounded(t *testing.T) {
	const limit = 64 << 10
	cl := &countingListener{}
	p := startNetProxyOn(t, tunnelOpts(Options{MaxHeaderBytes: limit}), "", true, func(l net.Listener) net.Listener {
		cl.Listener = l
		return cl
	})
	tc := p.interceptedTunnel(t, "example.test:443")
	tc.SetDeadline(time.Now().Add(10 * time.Second))
	go func() { // an endless header block, up to 64 MiB
		fmt.Fprintf(tc, "GET /x HTTP/1.1\r\nHost: example.test\r\n")
		line := []byte("X-Pad: " + strings.Repeat("a", 1000) + "\r\n")
		for i := 0; i < 64<<10; i++ {
			if _, err := tc.Write(line); err != nil {
				return
			}
		}
	}()
	resp, err := http.ReadResponse(bufio.NewReader(tc), nil)
	if err != nil {
		t.Fatalf("no answer to an endless header block: %v", err)
	}
	read := cl.read.Load()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("status %d, want 431", resp.StatusCode)
	}
	if max := int64(2*limit + 64<<10); read > max {
		t.Errorf("the proxy read %d bytes before answering, want at most %d", read, max)
	}
}

// Regression: an intercepted tunnel had no idle_timeout; idle tunnels
// held their connection slots forever. One is now closed when it has
// waited idle_timeout for its next request.
func TestTunnelIdleTimeout(t *testing.T) {
	const idle = 300 * time.Millisecond
	p := startNetProxy(t, tunnelOpts(Options{IdleTimeout: idle}), "", true)
	tc := p.interceptedTunnel(t, CheckHost+":443")
	tc.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(tc, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", CheckHost)
	br := bufio.NewReader(tc)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	start := time.Now()
	_, err = br.ReadByte()
	waited := time.Since(start)
	if isTimeout(err) || err == nil {
		t.Fatalf("the idle tunnel stayed open %v (read: %v), want it closed after %v", waited, err, idle)
	}
	if waited < idle/2 {
		t.Errorf("closed after %v, want about %v", waited, idle)
	}
}

// Regression: no read_header_timeout inside tunnels. A tunnel that
// trickles its header block is now closed after read_header_timeout.
func TestTunnelReadHeaderTimeout(t *testing.T) {
	const rht = 500 * time.Millisecond
	p := startNetProxy(t, tunnelOpts(Options{ReadHeaderTimeout: rht}), "", true)
	tc := p.interceptedTunnel(t, "example.test:443")
	tc.SetDeadline(time.Now().Add(10 * time.Second))
	stop := make(chan struct{})
	defer close(stop)
	go func() { // one header byte every 50ms: never done
		fmt.Fprintf(tc, "GET / HTTP/1.1\r\nHost: example.test\r\nX-Slow: ")
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := tc.Write([]byte("a")); err != nil {
					return
				}
			}
		}
	}()
	start := time.Now()
	_, err := io.ReadAll(tc) // ends when the proxy closes the tunnel
	if isTimeout(err) {
		t.Fatalf("the trickling tunnel stayed open %v, want it closed after %v", time.Since(start), rht)
	}
}

// Idle tunnels no longer use up max_connections: with every slot held by
// a silent tunnel, a legitimate call still gets through once their
// read_header_timeout closes them.
func TestIdleTunnelsDoNotStarveCalls(t *testing.T) {
	const slots = 4
	tools := newCounter(t, "tcp4", "127.0.0.1:0")
	p := startNetProxyOn(t, tunnelOpts(Options{ReadHeaderTimeout: 300 * time.Millisecond, IdleTimeout: 300 * time.Millisecond}), "", true,
		func(l net.Listener) net.Listener { return netutil.LimitListener(l, slots) })
	for i := 0; i < slots; i++ {
		if resp, _, _ := p.connect(t, "example.test:443"); resp.StatusCode != http.StatusOK {
			t.Fatalf("CONNECT %d: %d", i, resp.StatusCode)
		}
	}
	c := p.client()
	c.Timeout = 10 * time.Second
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/status", tools.port()))
	if err != nil {
		t.Fatalf("a legitimate call with %d idle tunnels open: %v", slots, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || tools.hits.Load() != 1 {
		t.Errorf("status %d, %d hits; want 201 and 1", resp.StatusCode, tools.hits.Load())
	}
}

// Requests inside a tunnel still work, several on one connection, and a
// ClientHello sent in the same write as the CONNECT is not lost.
func TestTunnelKeepAliveAndEarlyBytes(t *testing.T) {
	p := startNetProxy(t, tunnelOpts(Options{}), "", true)
	conn, err := net.Dial("tcp", p.url.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	// The CONNECT and the ClientHello leave in one write.
	early := &earlyConn{Conn: conn, prefix: []byte("CONNECT " + CheckHost + ":443 HTTP/1.1\r\nHost: " + CheckHost + ":443\r\n\r\n")}
	br := bufio.NewReader(conn)
	tc := tls.Client(&skipConnectConn{earlyConn: early, br: br}, &tls.Config{RootCAs: p.roots, ServerName: CheckHost})
	if err := tc.Handshake(); err != nil {
		t.Fatalf("handshake with the ClientHello sent beside the CONNECT: %v", err)
	}
	tbr := bufio.NewReader(tc)
	for i := 0; i < 3; i++ {
		fmt.Fprintf(tc, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", CheckHost)
		resp, err := http.ReadResponse(tbr, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("request %d: status %d, want 200", i, resp.StatusCode)
		}
	}
}

// earlyConn sends prefix in the same write as the first bytes written.
type earlyConn struct {
	net.Conn
	prefix []byte
}

func (c *earlyConn) Write(p []byte) (int, error) {
	if c.prefix != nil {
		b := append(c.prefix, p...)
		c.prefix = nil
		if _, err := c.Conn.Write(b); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// skipConnectConn reads past the CONNECT's answer before the TLS bytes.
type skipConnectConn struct {
	*earlyConn
	br      *bufio.Reader
	skipped bool
}

func (c *skipConnectConn) Read(p []byte) (int, error) {
	if !c.skipped {
		resp, err := http.ReadResponse(c.br, &http.Request{Method: http.MethodConnect})
		if err != nil {
			return 0, err
		}
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("CONNECT: %s", resp.Status)
		}
		c.skipped = true
	}
	return c.br.Read(p)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
