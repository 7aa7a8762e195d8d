package postgres

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/toolguard/toolguard/internal/pgtest"
	"github.com/toolguard/toolguard/journal"
)

// openTest opens a journal on a fresh schema of the test database; it is
// closed when the test ends. opts.DSN and opts.Schema default to the test
// database and a fresh schema.
func openTest(t *testing.T, opts Options) *Journal { return openTestTB(t, opts) }

func openTestTB(t testing.TB, opts Options) *Journal {
	t.Helper()
	if opts.DSN == "" {
		opts.DSN = pgtest.DSN(t)
	}
	if opts.Schema == "" {
		opts.Schema = pgtest.Schema(t)
	}
	j, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = j.Close() })
	return j
}

// claim claims a new step of key (started), or changes nothing when the
// key has a step.
func claim(key string, lease time.Duration) journal.Mutation {
	return func(cur *journal.Step) (journal.Change, error) {
		if cur != nil {
			return journal.Change{}, journal.ErrNoChange
		}
		return journal.Change{Step: journal.Step{Key: key, API: "pay", Route: "charge", Status: journal.StatusStarted,
			Method: "POST", Host: "api.example", Path: "/charges", BodyHash: "h1"}, Claim: true, Lease: lease}, nil
	}
}

// commit records a 200 outcome for the owner of (epoch, fence).
func commit(epoch, fence uint64, body string) journal.Mutation {
	return journal.Fenced(epoch, fence, func(cur *journal.Step) (journal.Change, error) {
		s := *cur
		s.Status = journal.StatusCommitted
		s.Response = &journal.Response{Status: 200, Body: []byte(body), BodyHash: "rh"}
		return journal.Change{Step: s}, nil
	})
}

// mustApply applies m and fails the test on an error.
func mustApply(t *testing.T, j *Journal, key string, m journal.Mutation) journal.Step {
	t.Helper()
	s, err := j.Apply(context.Background(), key, m)
	if err != nil {
		t.Fatalf("Apply %s: %v", key, err)
	}
	return s
}

func mustCheck(t *testing.T, j *Journal) {
	t.Helper()
	for _, err := range j.Check() {
		t.Errorf("Check: %v", err)
	}
}

// cutProxy forwards TCP connections from a loopback port to target and can
// cut them: refuse new connections, drop requests, or drop replies.
type cutProxy struct {
	t      *testing.T
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	mode   proxyMode
}

type proxyMode int

const (
	// pass forwards both ways.
	pass proxyMode = iota
	// refuse closes every connection, open or new.
	refuse
	// dropRequests closes a connection instead of forwarding the next bytes
	// the client sends: the server never sees them.
	dropRequests
	// dropReplies forwards requests, but closes a connection instead of
	// forwarding the next bytes the server sends: the server acts, and its
	// reply is lost.
	dropReplies
)

func newCutProxy(t *testing.T, target string) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{t: t, ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.setMode(refuse)
	})
	return p
}

func (p *cutProxy) addr() string { return p.ln.Addr().String() }

// setMode switches the mode; refuse also closes the open connections.
func (p *cutProxy) setMode(m proxyMode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = m
	if m == refuse {
		for c := range p.conns {
			c.Close()
		}
	}
}

func (p *cutProxy) getMode() proxyMode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

func (p *cutProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mode == refuse {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *cutProxy) accept() {
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
			continue
		}
		go p.pipe(c, s, dropRequests)
		go p.pipe(s, c, dropReplies)
	}
}

// pipe copies from src to dst until either fails or the mode says to cut
// this direction.
func (p *cutProxy) pipe(src, dst net.Conn, cut proxyMode) {
	defer src.Close()
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if m := p.getMode(); m == cut || m == refuse {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
