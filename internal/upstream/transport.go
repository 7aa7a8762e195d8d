package upstream

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

// Options tune the transport of upstream calls. They cannot replace its
// dialer: every upstream connection is opened by the dial function
// NewTransport is given. The zero value verifies against the system roots
// and keeps 256 idle connections per host.
type Options struct {
	// CAFile adds PEM roots to the roots upstream certificates are
	// verified against; empty adds none.
	CAFile string
	// RootCAs, when set, are the roots upstream certificates are verified
	// against instead of the system's (CAFile is added to a copy); nil
	// means the system roots, so SSL_CERT_FILE works.
	RootCAs *x509.CertPool
	// MaxIdleConnsPerHost bounds idle keep-alive connections per upstream;
	// zero means 256 (Go's default of 2 costs a TLS handshake per request).
	MaxIdleConnsPerHost int
}

// NewTransport returns the transport toolguard uses for upstream calls,
// connecting with dial. Unlike goproxy's default it never reads
// HTTP_PROXY/HTTPS_PROXY (the sidecar inherits them, and honouring them
// would loop through itself), verifies upstream certificates, keeps many
// idle connections per host, and does not ask for compression on the
// client's behalf. It fails only when o.CAFile cannot be read or holds no
// certificate.
func NewTransport(o Options, dial func(ctx context.Context, network, addr string) (net.Conn, error)) (*http.Transport, error) {
	var roots *x509.CertPool
	if o.RootCAs != nil {
		roots = o.RootCAs.Clone()
	} else if sys, err := x509.SystemCertPool(); err == nil && sys != nil {
		roots = sys
	} else {
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
	return &http.Transport{
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
	}, nil
}
