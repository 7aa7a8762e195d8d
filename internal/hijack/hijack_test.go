package hijack

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestWithReader(t *testing.T) {
	c1, c2 := net.Pipe()
	defer c1.Close()
	defer c2.Close()
	go func() { c2.Write([]byte(" world")); c2.Close() }()
	c := WithReader(c1, io.MultiReader(strings.NewReader("hello"), c1))
	got, err := io.ReadAll(c)
	if err != nil && !errors.Is(err, io.ErrClosedPipe) {
		t.Fatal(err)
	}
	if string(got) != "hello world" {
		t.Fatalf("read %q, want the buffered bytes then the connection's", got)
	}
}

// The Listener hands its connection to an http.Server once, and Serve
// returns when that connection is closed.
func TestListenerServesOneConnection(t *testing.T) {
	server, client := net.Pipe()
	l := NewListener(server)
	if l.Addr() != server.LocalAddr() {
		t.Errorf("Addr = %v, want the connection's %v", l.Addr(), server.LocalAddr())
	}
	if err := l.Close(); err != nil {
		t.Errorf("Close = %v, want nil", err)
	}
	l.Offer(l.Conn())
	served := make(chan error, 1)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	})}
	go func() { served <- srv.Serve(l) }()

	req, _ := http.NewRequest(http.MethodGet, "http://tunnel.test/", nil)
	req.Close = true // the server closes the connection after answering
	if err := req.Write(client); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(client), req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if string(body) != "ok" {
		t.Errorf("body %q, want ok", body)
	}
	select {
	case err := <-served:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("Serve = %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve outlived its connection")
	}
	if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after the close = %v, want net.ErrClosed", err)
	}
	client.Close()
}

// Bytes a client sends in the same write as its CONNECT are read ahead by
// the HTTP server; Buffered hands them over as the start of the
// connection, and a TCP connection keeps its half-closes.
func TestBufferedHandsOverReadAhead(t *testing.T) {
	for _, tc := range []struct {
		name       string
		early      string // sent with the CONNECT
		wantBuffer bool   // the connection replays read-ahead bytes
	}{
		{name: "bytes read ahead", early: "HELLO", wantBuffer: true},
		{name: "nothing read ahead"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := make(chan string, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b := Buffered{ResponseWriter: w, Hijacker: w.(http.Hijacker)}
				c, rw, err := b.Hijack()
				if err != nil {
					got <- "hijack: " + err.Error()
					return
				}
				defer c.Close()
				_, isReader := c.(*readerTCPConn)
				if _, ok := c.(interface{ CloseWrite() error }); !ok || isReader != tc.wantBuffer {
					got <- "wrong connection type"
					return
				}
				io.WriteString(c, "HTTP/1.1 200 OK\r\n\r\n")
				buf := make([]byte, len(tc.early)+4)
				n, _ := io.ReadFull(rw, buf)
				got <- string(buf[:n])
			}))
			defer srv.Close()
			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			io.WriteString(conn, "CONNECT tools.test:443 HTTP/1.1\r\nHost: tools.test:443\r\n\r\n"+tc.early)
			if _, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: http.MethodConnect}); err != nil {
				t.Fatal(err)
			}
			io.WriteString(conn, "LATE")
			if s, want := <-got, tc.early+"LATE"; s != want {
				t.Fatalf("the hijacked connection read %q, want %q", s, want)
			}
		})
	}
}

type failingHijacker struct{ err error }

func (f failingHijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) { return nil, nil, f.err }

func TestBufferedPassesHijackErrors(t *testing.T) {
	want := errors.New("not hijackable")
	b := Buffered{ResponseWriter: httptest.NewRecorder(), Hijacker: failingHijacker{err: want}}
	if _, _, err := b.Hijack(); !errors.Is(err, want) {
		t.Fatalf("Hijack = %v, want %v", err, want)
	}
}
