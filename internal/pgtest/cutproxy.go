package pgtest

import (
	"fmt"
	"net"
	"net/url"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
)

// CutProxy forwards TCP connections from a loopback port to a PostgreSQL
// server and can cut them, to test what a client does when the database
// goes away at a chosen moment.
type CutProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	mode   Mode
}

// Mode is what a CutProxy does with the traffic.
type Mode int

const (
	// Pass forwards both ways.
	Pass Mode = iota
	// Refuse closes every connection, open or new: the database is down.
	Refuse
	// DropRequests closes a connection instead of forwarding the next
	// bytes the client sends: the server never sees them.
	DropRequests
	// DropReplies forwards requests but closes a connection instead of
	// forwarding the next bytes the server sends: the server acts (and
	// commits), and its reply is lost.
	DropReplies
)

// NewCutProxy listens on 127.0.0.1:0 and forwards to target (host:port)
// until the test ends.
func NewCutProxy(t testing.TB, target string) *CutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &CutProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.SetMode(Refuse)
	})
	return p
}

// Through starts a CutProxy in front of the server of dsn and returns the
// DSN that reaches it through the proxy.
func Through(t testing.TB, dsn string) (string, *CutProxy) {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p := NewCutProxy(t, fmt.Sprintf("%s:%d", cfg.Host, cfg.Port))
	u := url.URL{Scheme: "postgres", User: url.User(cfg.User), Host: p.Addr(), Path: "/" + cfg.Database, RawQuery: "sslmode=disable"}
	return u.String(), p
}

// Addr is the proxy's host:port.
func (p *CutProxy) Addr() string { return p.ln.Addr().String() }

// SetMode switches the mode; Refuse also closes the open connections.
func (p *CutProxy) SetMode(m Mode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = m
	if m == Refuse {
		for c := range p.conns {
			c.Close()
		}
		clear(p.conns)
	}
}

func (p *CutProxy) getMode() Mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

func (p *CutProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mode == Refuse {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *CutProxy) forget(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
}

func (p *CutProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil || !p.track(s) {
			c.Close()
			p.forget(c)
			continue
		}
		go p.pipe(c, s, DropRequests)
		go p.pipe(s, c, DropReplies)
	}
}

// pipe copies from src to dst until either fails or the mode cuts this
// direction.
func (p *CutProxy) pipe(src, dst net.Conn, cut Mode) {
	defer func() {
		src.Close()
		dst.Close()
		p.forget(src)
		p.forget(dst)
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if m := p.getMode(); m == cut || m == Refuse {
				return
			}
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
