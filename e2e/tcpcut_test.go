package e2e

import (
	"io"
	"net"
	"sync"
	"testing"
)

// cutter is a TCP proxy in front of PostgreSQL that the test can cut: it
// closes every connection through it and, while down, refuses new ones, as
// a database failover or a network partition would.
type cutter struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	down   bool
	conns  map[net.Conn]struct{}
}

func newCutter(t *testing.T, target string) *cutter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &cutter{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	go c.serve()
	t.Cleanup(func() { ln.Close(); c.cut(true) })
	return c
}

func (c *cutter) addr() string { return c.ln.Addr().String() }

func (c *cutter) serve() {
	for {
		in, err := c.ln.Accept()
		if err != nil {
			return
		}
		c.mu.Lock()
		down := c.down
		if !down {
			c.conns[in] = struct{}{}
		}
		c.mu.Unlock()
		if down {
			in.Close()
			continue
		}
		go c.pipe(in)
	}
}

func (c *cutter) pipe(in net.Conn) {
	out, err := net.Dial("tcp", c.target)
	if err != nil {
		in.Close()
		return
	}
	c.mu.Lock()
	if c.down {
		c.mu.Unlock()
		in.Close()
		out.Close()
		return
	}
	c.conns[out] = struct{}{}
	c.mu.Unlock()
	go func() { io.Copy(out, in); out.Close() }()
	io.Copy(in, out)
	in.Close()
}

// cut closes every open connection; with down set, new connections are
// refused until restore.
func (c *cutter) cut(down bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.down = down
	for conn := range c.conns {
		conn.Close()
	}
	clear(c.conns)
}

// restore accepts connections again.
func (c *cutter) restore() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.down = false
}
