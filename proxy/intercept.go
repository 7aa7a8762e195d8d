package proxy

import (
	"bufio"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/elazarl/goproxy"

	"github.com/toolguard/toolguard/internal/eventstream"
	"github.com/toolguard/toolguard/internal/hijack"
	"github.com/toolguard/toolguard/problem"
)

// Intercepted tunnels.
//
// goproxy's own MITM loop (ConnectMitm) reads each request inside a tunnel
// whole, with no limit on its header block and no deadline, so a tunnel
// could hold any amount of memory and a connection slot forever. toolguard
// hijacks the tunnel instead (ConnectHijack), terminates TLS itself, and
// serves the requests inside with a net/http server per tunnel: the same
// max_header_bytes (431, then close), read_header_timeout and idle_timeout
// as the proxy listener, enforced as the bytes arrive. Each request then
// takes the path of a plain proxied request (goproxy's ServeHTTP), so the
// pipeline cannot tell a tunnelled request from a plain one.

// tlsRecordHandshake is the first byte of a TLS ClientHello.
const tlsRecordHandshake = 0x16

// intercept is the ConnectAction of a tunnel whose requests are read.
func (s *Server) intercept() *goproxy.ConnectAction {
	return &goproxy.ConnectAction{Action: goproxy.ConnectHijack, Hijack: s.serveTunnel}
}

// serveTunnel answers the CONNECT and serves the requests of the tunnel
// until the client leaves or a limit closes it. goproxy hands over the
// hijacked connection and writes nothing itself (ConnectHijack).
func (s *Server) serveTunnel(req *http.Request, client net.Conn, _ *goproxy.ProxyCtx) {
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		client.Close()
		return
	}
	// The first request must start within read_header_timeout, as on a
	// new connection to the proxy listener.
	br := bufio.NewReader(client)
	client.SetReadDeadline(time.Now().Add(s.opts.ReadHeaderTimeout))
	first, err := br.Peek(1)
	client.SetReadDeadline(time.Time{})
	if err != nil {
		client.Close()
		return
	}
	l := hijack.NewListener(hijack.WithReader(client, br))
	conn, scheme := l.Conn(), "http"
	if first[0] == tlsRecordHandshake {
		cfg, _ := s.tlsConfigFor(req.URL.Host, nil)
		conn, scheme = tls.Server(conn, cfg), "https"
	}
	// Anything else (Node's undici sends CONNECT for http:// URLs) is
	// plain HTTP inside the tunnel.
	l.Offer(conn)
	srv := &http.Server{
		Handler:           s.tunnelHandler(req.URL.Host, scheme),
		MaxHeaderBytes:    s.opts.MaxHeaderBytes,
		ReadHeaderTimeout: s.opts.ReadHeaderTimeout,
		IdleTimeout:       s.opts.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	srv.Serve(l) // returns once the tunnel's connection is closed
}

// tunnelHandler makes the requests read inside a tunnel to target
// absolute, as goproxy's MITM loop does (the Host header first, the
// CONNECT target when there is none), and proxies them.
func (s *Server) tunnelHandler(target, scheme string) http.Handler {
	h := s.Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodConnect {
			p := problem.New(problem.Rejected, "", "CONNECT inside a tunnel is not supported")
			p.Status = http.StatusMethodNotAllowed
			eventstream.Copy(w, s.refuse(r, refusal{problem: p}))
			return
		}
		if !r.URL.IsAbs() {
			r.URL.Host = r.Host
			if r.URL.Host == "" {
				r.URL.Host = target
			}
		}
		r.URL.Scheme = scheme
		h.ServeHTTP(w, r)
	})
}
