package proxy

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/problem"
)

// trickle sends, on conn, a guarded POST that announces 5 MiB and then
// sends one byte a second until stop is closed; it returns the answer.
func trickle(t *testing.T, conn net.Conn, br *bufio.Reader, target string, stop <-chan struct{}) (*http.Response, error) {
	t.Helper()
	fmt.Fprintf(conn, "POST http://%s/run HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", target, target, 5<<20)
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := conn.Write([]byte(" ")); err != nil {
					return
				}
			}
		}
	}()
	return http.ReadResponse(br, nil)
}

// Regression: one client that announced a 5 MiB body and sent a byte a
// second held the whole body_buffer (room was reserved from the announced
// length), so every other guarded call waited for as long as it trickled.
// Now room is taken as bytes arrive, and the trickler is cut off by the
// body deadlines with 408, having journaled and sent nothing.
func TestSlowBodyDoesNotStallOthers(t *testing.T) {
	for _, mode := range []string{"plain", "intercepted"} {
		t.Run(mode, func(t *testing.T) {
			tools := newCounter(t, "tcp4", "127.0.0.1:0")
			var upstream TransportOptions
			if mode == "intercepted" {
				tools, upstream = newTLSCounter(t)
			}
			target := "127.0.0.1:" + strconv.Itoa(tools.port())
			rule := "api: tools\nhosts: [\"" + target + "\"]\ncredential: none\nroutes:\n  - name: run\n    match: POST /run\n    effect: irreversible\n    key: {fields: [job]}\n"
			// Longer than the others may take; the trickler (1 byte/s) is
			// cut off by the minimum rate once it is used up.
			const timeout = 3 * time.Second
			opts := Options{BodyReadTimeout: timeout, Transport: upstream}
			p := startNetProxy(t, opts, rule, mode == "intercepted")

			conn, err := net.Dial("tcp", p.url.Host)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			var tc net.Conn = conn
			if mode == "intercepted" {
				fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
				br := bufio.NewReader(conn)
				if resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect}); err != nil || resp.StatusCode != 200 {
					t.Fatalf("CONNECT: %v %v", resp, err)
				}
				tlsConn := tls.Client(conn, &tls.Config{RootCAs: p.roots, ServerName: "127.0.0.1"})
				if err := tlsConn.Handshake(); err != nil {
					t.Fatal(err)
				}
				tc = tlsConn
			}
			stop := make(chan struct{})
			defer close(stop)
			started := time.Now()
			type answer struct {
				resp *http.Response
				err  error
			}
			trickler := make(chan answer, 1)
			go func() {
				resp, err := trickle(t, tc, bufio.NewReader(tc), target, stop)
				trickler <- answer{resp, err}
			}()
			// Wait until the trickler's body is being read: it holds room.
			for p.srv.bodies.TryAcquire(p.srv.opts.BodyBuffer) {
				p.srv.bodies.Release(p.srv.opts.BodyBuffer)
				if time.Since(started) > 2*time.Second {
					t.Fatal("the trickler's body is not being read")
				}
				time.Sleep(time.Millisecond)
			}

			client := p.client()
			var wg sync.WaitGroup
			var mu sync.Mutex
			var slowest time.Duration
			errs := make(chan string, 20)
			for i := range 20 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					begin := time.Now()
					url := "http://" + target + "/run"
					if mode == "intercepted" {
						url = "https://" + target + "/run"
					}
					resp, err := client.Post(url, "application/json", strings.NewReader(fmt.Sprintf(`{"job":"j%d"}`, i)))
					if err != nil {
						errs <- err.Error()
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					took := time.Since(begin)
					mu.Lock()
					slowest = max(slowest, took)
					mu.Unlock()
					if resp.StatusCode != http.StatusCreated || took > 2*time.Second {
						errs <- fmt.Sprintf("call %d: status %d after %v", i, resp.StatusCode, took)
					}
				}()
			}
			wg.Wait()
			close(errs)
			for e := range errs {
				t.Error(e)
			}

			var a answer
			select {
			case a = <-trickler:
			case <-time.After(timeout + 5*time.Second):
				t.Fatal("the trickler got no answer")
			}
			if a.err != nil {
				t.Fatalf("trickler: %v", a.err)
			}
			took := time.Since(started)
			t.Logf("20 guarded calls beside the trickler: slowest %v; the trickler got %d after %v", slowest, a.resp.StatusCode, took)
			if a.resp.StatusCode != http.StatusRequestTimeout || took < timeout {
				t.Errorf("trickler: status %d after %v, want 408 after at least %v", a.resp.StatusCode, took, timeout)
			}
			if pr := problemOf(t, a.resp); pr.Type != problem.RequestTimeout {
				t.Errorf("trickler: problem %+v, want %s", pr, problem.RequestTimeout)
			}
			if n := tools.hits.Load(); n != 20 {
				t.Errorf("upstream effects: %d, want 20 (none for the trickler)", n)
			}
			steps, err := p.j.List(journal.Filter{Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			if len(steps) != 20 {
				t.Errorf("%d steps journaled, want 20 (none for the trickler)", len(steps))
			}
		})
	}
}

// A body that arrives in pieces, each within the read timeout, is read
// whole; one that pauses longer than the timeout is cut off with 408.
func TestBodyReadDeadlines(t *testing.T) {
	tools := newCounter(t, "tcp4", "127.0.0.1:0")
	target := "127.0.0.1:" + strconv.Itoa(tools.port())
	rule := "api: tools\nhosts: [\"" + target + "\"]\ncredential: none\nroutes:\n  - name: run\n    match: POST /run\n    effect: irreversible\n    key: {fields: [job]}\n"
	p := startNetProxy(t, Options{BodyReadTimeout: 500 * time.Millisecond, BodyMinRate: -1}, rule, false)
	tests := []struct {
		name  string
		pause time.Duration
		want  int
	}{
		{name: "steady", pause: 100 * time.Millisecond, want: http.StatusCreated},
		{name: "idle", pause: 1500 * time.Millisecond, want: http.StatusRequestTimeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"job":"` + tc.name + `"}`
			conn, err := net.Dial("tcp", p.url.Host)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(10 * time.Second))
			fmt.Fprintf(conn, "POST http://%s/run HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", target, target, len(body))
			for i := range len(body) {
				if i%4 == 0 {
					time.Sleep(tc.pause)
				}
				if _, err := conn.Write([]byte{body[i]}); err != nil {
					break // cut off
				}
			}
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
	if n := tools.hits.Load(); n != 1 {
		t.Errorf("upstream effects: %d, want 1", n)
	}
}

// A guarded body announced beyond limits.max_body inside an intercepted
// tunnel is refused at once: the proxy does not read the announced bytes
// before it answers.
func TestOversizedBodyInTunnelRefusedAtOnce(t *testing.T) {
	tools, upstream := newTLSCounter(t)
	target := "127.0.0.1:" + strconv.Itoa(tools.port())
	rule := "api: tools\nhosts: [\"" + target + "\"]\ncredential: none\nroutes:\n  - name: run\n    match: POST /run\n    effect: irreversible\n    key: {fields: [job]}\n"
	p := startNetProxy(t, Options{Transport: upstream, MaxBody: 1 << 20}, rule, true)
	resp, conn, br := p.connect(t, target)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT: %d", resp.StatusCode)
	}
	if br.Buffered() > 0 {
		t.Fatal("bytes after the CONNECT answer")
	}
	tlsConn := tls.Client(conn, &tls.Config{RootCAs: p.roots, ServerName: "127.0.0.1"})
	tlsConn.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(tlsConn, "POST /run HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{\"job\":", target, 100<<20)
	answer, err := http.ReadResponse(bufio.NewReader(tlsConn), nil)
	if err != nil {
		t.Fatalf("no answer while the body is unsent: %v", err)
	}
	if pr := problemOf(t, answer); answer.StatusCode != http.StatusRequestEntityTooLarge || pr.Type != problem.BodyTooLarge {
		t.Errorf("%d %+v, want 413 %s", answer.StatusCode, pr, problem.BodyTooLarge)
	}
	if n := tools.hits.Load(); n != 0 {
		t.Errorf("upstream effects: %d, want 0", n)
	}
}

// Many concurrent bodies a little over 64 KiB, more than body_buffer holds
// at once, all go through: a body announced at up to 128 KiB takes its room
// in one step, waiting for it, rather than failing to grow while others
// hold the rest.
func TestBodiesBeyondBufferWaitTheirTurn(t *testing.T) {
	tools := newCounter(t, "tcp4", "127.0.0.1:0")
	target := "127.0.0.1:" + strconv.Itoa(tools.port())
	rule := "api: tools\nhosts: [\"" + target + "\"]\ncredential: none\nroutes:\n  - name: run\n    match: POST /run\n    effect: irreversible\n    key: {fields: [job]}\n"
	p := startNetProxy(t, Options{BodyBuffer: 512 << 10}, rule, false)
	client := p.client()
	pad := strings.Repeat("x", 70<<10)
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := client.Post("http://"+target+"/run", "application/json", strings.NewReader(fmt.Sprintf(`{"job":"j%d","pad":%q}`, i, pad)))
			if err != nil {
				t.Error(err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				t.Errorf("call %d: %d %s", i, resp.StatusCode, b)
			}
		}()
	}
	wg.Wait()
	if n := tools.hits.Load(); n != 32 {
		t.Errorf("upstream effects: %d, want 32", n)
	}
}
