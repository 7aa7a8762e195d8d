package proxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"
)

// TransportOptions tune the upstream transport.
type TransportOptions struct {
	// CAFile adds PEM roots to the system pool; empty adds none.
	CAFile string
	// MaxIdleConnsPerHost bounds idle keep-alive connections per upstream;
	// zero means 256 (Go's default of 2 costs a TLS handshake per request).
	MaxIdleConnsPerHost int
	// DialContext, when set, replaces the default dialer (tests). The
	// proxy wraps whichever dialer the transport has with its dial-time
	// egress checks (see dial.go).
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
}

// NewTransport returns the transport toolguard uses for upstream calls.
// Unlike goproxy's default it never reads HTTP_PROXY/HTTPS_PROXY (the
// sidecar inherits them, and honouring them would loop through itself),
// verifies upstream certificates against the system roots (so SSL_CERT_FILE
// works) plus CAFile, keeps many idle connections per host, and does not ask
// for compression on the client's behalf.
func NewTransport(o TransportOptions) (*http.Transport, error) {
	roots, err := x509.SystemCertPool()
	if err != nil || roots == nil {
		roots = x509.NewCertPool()
	}
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("read upstream CA file: %w", err)
		}
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("read upstream CA file %s: no PEM certificates found", o.CAFile)
		}
	}
	if o.MaxIdleConnsPerHost <= 0 {
		o.MaxIdleConnsPerHost = 256
	}
	dial := o.DialContext
	if dial == nil {
		dial = newDialer().DialContext
	}
	t := &http.Transport{
		Proxy:                 nil,
		DialContext:           dial,
		TLSClientConfig:       &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:   10 * time.Second,
		MaxIdleConns:          4 * o.MaxIdleConnsPerHost,
		MaxIdleConnsPerHost:   o.MaxIdleConnsPerHost,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
		ForceAttemptHTTP2:     true,
	}
	return t, nil
}
