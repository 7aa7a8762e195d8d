//go:build linux

package main

import (
	"context"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// upstreams are the APIs the load reaches: one plain-HTTP server and a TLS
// twin with the same handler. The added latency is shared and changed
// between cells.
type upstreams struct {
	plain   *httptest.Server
	tls     *httptest.Server
	latency atomic.Int64 // nanoseconds added to every answer
	effects atomic.Int64 // invoices created
}

// blobSize is the body size of GET /v1/blob, for the memory measurement.
const blobSize = 64 << 10

func startUpstreams() *upstreams {
	u := &upstreams{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/invoices", u.create)
	mux.HandleFunc("GET /v1/ping", u.ping)
	mux.Handle("/mcp", u.mcpHandler())
	blob := []byte(strings.Repeat("x", blobSize))
	mux.HandleFunc("GET /v1/blob", func(w http.ResponseWriter, r *http.Request) {
		u.delay()
		w.Header().Set("Content-Length", strconv.Itoa(len(blob)))
		w.Write(blob)
	})
	u.plain = newLabelledServer(mux, false)
	u.tls = newLabelledServer(mux, true)
	return u
}

// newLabelledServer starts an httptest server whose connection goroutines
// carry the pprof label role=upstream, so that a profile of the harness can
// tell the upstream's CPU from the proxy's.
func newLabelledServer(h http.Handler, useTLS bool) *httptest.Server {
	s := httptest.NewUnstartedServer(h)
	s.Config.ReadHeaderTimeout = 10 * time.Second
	pprof.Do(context.Background(), pprof.Labels("role", "upstream"), func(context.Context) {
		// Start and StartTLS spawn the serving goroutine here, so it (and
		// every connection goroutine it starts) inherits the label.
		if useTLS {
			s.StartTLS()
		} else {
			s.Start()
		}
	})
	return s
}

func (u *upstreams) close() {
	u.plain.Close()
	u.tls.Close()
}

func (u *upstreams) setLatency(d time.Duration) { u.latency.Store(int64(d)) }

// delay models the upstream's own work. A sleep is the point here: it is
// latency the proxy has to overlap, not synchronisation.
func (u *upstreams) delay() {
	if d := time.Duration(u.latency.Load()); d > 0 {
		time.Sleep(d)
	}
}

func (u *upstreams) ping(w http.ResponseWriter, r *http.Request) {
	u.delay()
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"ok":true}`)
}

func (u *upstreams) create(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	u.delay()
	n := u.effects.Add(1)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, `{"id":"inv_%d","status":"open","amount":4200,"currency":"eur"}`, n)
}

// hosts are the upstreams' host:port, as rule files name them.
func (u *upstreams) hosts() []string {
	return []string{hostOf(u.plain.URL), hostOf(u.tls.URL)}
}

func hostOf(rawURL string) string {
	h := strings.TrimPrefix(strings.TrimPrefix(rawURL, "http://"), "https://")
	if _, _, err := net.SplitHostPort(h); err != nil {
		return ""
	}
	return h
}

// writeSetup writes what toolguard serve needs into dir: a rule file that
// guards POST /v1/invoices on both upstreams, the TLS upstream's
// certificate and a config file naming it as upstream.ca_file. It returns
// the rules directory and the config file.
func (u *upstreams) writeSetup(dir string) (rulesDir, configFile string, err error) {
	rulesDir = filepath.Join(dir, "rules")
	if err := os.MkdirAll(rulesDir, 0o755); err != nil {
		return "", "", err
	}
	quoted := make([]string, 0, 2)
	for _, h := range u.hosts() {
		quoted = append(quoted, strconv.Quote(h))
	}
	rule := fmt.Sprintf(`version: v1
api: bench
hosts: [%s]
credential: {header: Authorization}
routes:
  - name: create_invoice
    match: POST /v1/invoices
    effect: irreversible
    key:
      ignore: [trace_id]
    operation_id: body:id
`, strings.Join(quoted, ", "))
	if err := os.WriteFile(filepath.Join(rulesDir, "bench.yaml"), []byte(rule), 0o644); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(filepath.Join(rulesDir, "bench-mcp.yaml"), []byte(mcpRule), 0o644); err != nil {
		return "", "", err
	}
	caFile := filepath.Join(dir, "upstream-ca.pem")
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: u.tls.Certificate().Raw})
	if err := os.WriteFile(caFile, certPEM, 0o644); err != nil {
		return "", "", err
	}
	configFile = filepath.Join(dir, "config.yaml")
	cfg := "upstream:\n  ca_file: " + caFile + "\nmcp:\n  servers: [\"" + mcpServerName + "=" + u.plain.URL + "/mcp\"]\n"
	if err := os.WriteFile(configFile, []byte(cfg), 0o644); err != nil {
		return "", "", err
	}
	return rulesDir, configFile, nil
}
