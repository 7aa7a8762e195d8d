package e2e

import (
	"bytes"
	"net"
	"sync"
	"testing"
)

// ackHolder is a TCP relay in front of PostgreSQL that holds back the
// database's answers on a connection once the client sent a statement
// containing a marker: the statement reaches the database and commits,
// but its acknowledgement arrives only when the test releases it, as over
// a slow network, or to a process that was stopped meanwhile.
type ackHolder struct {
	ln      net.Listener
	target  string
	marker  []byte
	held    chan struct{} // closed when a connection starts holding
	release chan struct{} // closed by the test: deliver what was held
	once    sync.Once
	heldSig sync.Once
	armed   bool
	mu      sync.Mutex
}

func newAckHolder(t *testing.T, target, marker string) *ackHolder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &ackHolder{ln: ln, target: target, marker: []byte(marker), held: make(chan struct{}), release: make(chan struct{})}
	go h.serve()
	t.Cleanup(func() { ln.Close(); h.deliver() })
	return h
}

func (h *ackHolder) addr() string { return h.ln.Addr().String() }

// arm makes the next statement with the marker be held.
func (h *ackHolder) arm() {
	h.mu.Lock()
	h.armed = true
	h.mu.Unlock()
}

// deliver releases every held answer.
func (h *ackHolder) deliver() { h.once.Do(func() { close(h.release) }) }

func (h *ackHolder) serve() {
	for {
		in, err := h.ln.Accept()
		if err != nil {
			return
		}
		go h.pipe(in)
	}
}

func (h *ackHolder) pipe(in net.Conn) {
	out, err := net.Dial("tcp", h.target)
	if err != nil {
		in.Close()
		return
	}
	hold := make(chan struct{}) // closed when this connection holds
	var holding sync.Once
	go func() {
		defer out.Close()
		buf := make([]byte, 64<<10)
		for {
			n, err := in.Read(buf)
			if n > 0 {
				if h.take(buf[:n]) {
					holding.Do(func() { close(hold) })
				}
				if _, werr := out.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	defer in.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := out.Read(buf)
		if n > 0 {
			select {
			case <-hold:
				h.signalHeld()
				<-h.release
			default:
			}
			if _, werr := in.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// take reports whether p carries the marker while the holder is armed,
// disarming it.
func (h *ackHolder) take(p []byte) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.armed || !bytes.Contains(p, h.marker) {
		return false
	}
	h.armed = false
	return true
}

func (h *ackHolder) signalHeld() { h.heldSig.Do(func() { close(h.held) }) }
