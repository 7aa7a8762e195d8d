package upstream

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

func TestNewTransport(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(r.Header.Get("Accept-Encoding")))
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())

	for _, tc := range []struct {
		name      string
		opts      Options
		wantErr   string // NewTransport's error
		wantGet   bool   // a GET to the test server verifies
		wantIdle  int
		wantRoots *x509.CertPool // when set, the pool must not be this one (a copy)
	}{
		{name: "system roots", opts: Options{}, wantIdle: 256},
		{name: "root pool", opts: Options{RootCAs: roots}, wantGet: true, wantIdle: 256, wantRoots: roots},
		{name: "CA file", opts: Options{CAFile: caFile, MaxIdleConnsPerHost: 8}, wantGet: true, wantIdle: 8},
		{name: "CA file on a root pool", opts: Options{CAFile: caFile, RootCAs: x509.NewCertPool()}, wantGet: true, wantIdle: 256},
		{name: "missing CA file", opts: Options{CAFile: filepath.Join(dir, "none.pem")}, wantErr: "read upstream CA file: "},
		{name: "CA file without PEM", opts: Options{CAFile: junk}, wantErr: "no PEM certificates found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var dials atomic.Int32
			dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
				dials.Add(1)
				var d net.Dialer
				return d.DialContext(ctx, network, addr)
			}
			tr, err := NewTransport(tc.opts, dial)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("NewTransport error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(tr.CloseIdleConnections)
			if tr.Proxy != nil || !tr.DisableCompression {
				t.Error("the transport reads proxy variables or asks for compression")
			}
			if tr.MaxIdleConnsPerHost != tc.wantIdle || tr.MaxIdleConns != 4*tc.wantIdle {
				t.Errorf("idle connections = %d per host, %d in all; want %d, %d", tr.MaxIdleConnsPerHost, tr.MaxIdleConns, tc.wantIdle, 4*tc.wantIdle)
			}
			if tc.wantRoots != nil && tr.TLSClientConfig.RootCAs == tc.wantRoots {
				t.Error("the transport uses the caller's pool, not a copy")
			}
			resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
			if got := err == nil; got != tc.wantGet {
				t.Fatalf("GET verified = %v (%v), want %v", got, err, tc.wantGet)
			}
			if dials.Load() == 0 {
				t.Error("the transport did not connect with the given dial")
			}
			if err == nil {
				resp.Body.Close()
			}
		})
	}
}
