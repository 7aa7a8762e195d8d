package proxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal/bolt"
	"github.com/toolguard/toolguard/problem"
	"github.com/toolguard/toolguard/rules"
	"github.com/toolguard/toolguard/tlsca"
)

// fakeResolver answers lookups from a table; a name it does not hold is
// not found. It stands in for /etc/hosts, which tests cannot edit.
type fakeResolver map[string][]netip.Addr

func (r fakeResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	var out []netip.Addr
	for _, ip := range r[strings.ToLower(host)] {
		if network == "ip" || (network == "ip4") == ip.Is4() {
			out = append(out, ip)
		}
	}
	if len(out) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return out, nil
}

// counter is an upstream that counts the requests it receives.
type counter struct {
	hits atomic.Int64
	ln   net.Listener
}

// newCounter serves on network/addr ("tcp4", "127.0.0.1:0"), answering
// every request 201 with a small JSON body.
func newCounter(t *testing.T, network, addr string) *counter {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	c := &counter{ln: ln}
	srv := &http.Server{Handler: c.handler()}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return c
}

func (c *counter) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		n := c.hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id":"op_%d"}`, n)
	})
}

// newTLSCounter is newCounter serving HTTPS on 127.0.0.1, with upstream
// transport options that trust it.
func newTLSCounter(t *testing.T) (*counter, TransportOptions) {
	t.Helper()
	c := &counter{}
	ts := httptest.NewUnstartedServer(c.handler())
	ts.StartTLS()
	t.Cleanup(ts.Close)
	c.ln = ts.Listener
	roots := x509.NewCertPool()
	roots.AddCert(ts.Certificate())
	return c, TransportOptions{RootCAs: roots}
}

func (c *counter) port() int { return c.ln.Addr().(*net.TCPAddr).Port }

// netProxy is an in-process proxy on a real listener, with a real
// http.Transport upstream, so that its dials go through the egress checks.
type netProxy struct {
	srv   *Server
	j     *bolt.Journal
	url   *url.URL
	roots *x509.CertPool // trusts the proxy's CA, when it has one
	logMu sync.Mutex
	logs  bytes.Buffer
}

// startNetProxy runs a proxy with opts and the rule file text (none when
// ""); mitm gives it a CA so that it intercepts TLS.
func startNetProxy(t *testing.T, opts Options, ruleFile string, mitm bool) *netProxy {
	t.Helper()
	return startNetProxyOn(t, opts, ruleFile, mitm, nil)
}

// startNetProxyOn is startNetProxy serving on wrap(listener) when wrap is
// set (a connection limit, a byte counter).
func startNetProxyOn(t *testing.T, opts Options, ruleFile string, mitm bool, wrap func(net.Listener) net.Listener) *netProxy {
	t.Helper()
	p := &netProxy{}
	opts.Logger = slog.New(slog.NewJSONHandler(lockedWriter{&p.logMu, &p.logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	set := &rules.Set{}
	if ruleFile != "" {
		api, err := rules.Parse("net.yaml", []byte(ruleFile))
		if err != nil {
			t.Fatal(err)
		}
		if set, err = rules.NewSet(api); err != nil {
			t.Fatal(err)
		}
	}
	j, err := bolt.Open(filepath.Join(t.TempDir(), "tg.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	if mitm {
		ca, err := tlsca.Create(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		opts.CA = ca
		p.roots = x509.NewCertPool()
		p.roots.AddCert(ca.Cert)
	}
	opts.Rules, opts.Journal, opts.Secret = set, j, []byte("0123456789abcdef0123456789abcdef")
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opts.SelfAddrs = append(opts.SelfAddrs, ln.Addr().String())
	if p.srv, err = New(opts); err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: p.srv.Handler()}
	served := ln
	if wrap != nil {
		served = wrap(ln)
	}
	go hs.Serve(served)
	t.Cleanup(func() { hs.Close(); p.srv.Close() })
	p.j = j
	p.url = &url.URL{Scheme: "http", Host: ln.Addr().String()}
	return p
}

// client returns an HTTP client that sends everything through the proxy.
func (p *netProxy) client() *http.Client {
	return &http.Client{Timeout: 20 * time.Second, Transport: credentialed{&http.Transport{
		Proxy:           http.ProxyURL(p.url),
		TLSClientConfig: &tls.Config{RootCAs: p.roots},
	}}}
}

// decisionLines returns the proxy's log lines with the given message.
func (p *netProxy) decisionLines(t *testing.T, msg string) []map[string]any {
	t.Helper()
	p.logMu.Lock()
	defer p.logMu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(p.logs.String()), "\n") {
		var m map[string]any
		if line == "" {
			continue
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// connect sends a CONNECT for target over a new connection and returns the
// proxy's answer, and the connection for a tunnel that was opened.
func (p *netProxy) connect(t *testing.T, target string) (*http.Response, net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", p.url.Host, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatalf("CONNECT %s: %v", target, err)
	}
	return resp, conn, br
}

// problemOf reads a problem+json answer.
func problemOf(t *testing.T, resp *http.Response) problem.Details {
	t.Helper()
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/problem+json" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d, Content-Type %q, want a problem: %s", resp.StatusCode, ct, b)
	}
	var pr problem.Details
	if err := json.NewDecoder(resp.Body).Decode(&pr); err != nil {
		t.Fatal(err)
	}
	return pr
}
