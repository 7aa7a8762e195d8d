package proxy

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"regexp"
	"strconv"
	"testing"

	"github.com/toolguard/toolguard/tlsca"
)

// simUpstream serves a simulated provider (an http.RoundTripper that
// answers requests in memory, keeping the provider's state) on real
// listeners, plain HTTP and HTTPS, so that the proxy reaches it as it
// reaches any upstream: through its own transport and the egress policy's
// Dial. Every name resolves to the listeners' address (loopback); URLs
// name the listeners' ports (at). The simulator sees each request with the
// URL it was sent to, its port left out, and answers it; an error it
// returns closes the connection without an answer.
type simUpstream struct {
	plain, secure *httptest.Server
	plainPort     string
	securePort    string
	roots         *x509.CertPool // trusts the HTTPS listener, for any name
}

func serveSim(t testing.TB, sim http.RoundTripper) *simUpstream {
	t.Helper()
	ca, err := tlsca.Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	leaves := tlsca.NewCache(ca, 0)
	u := &simUpstream{roots: x509.NewCertPool()}
	u.roots.AddCert(ca.Cert)
	u.plain = httptest.NewServer(u.handler(sim))
	t.Cleanup(u.plain.Close)
	u.secure = httptest.NewUnstartedServer(u.handler(sim))
	u.secure.TLS = &tls.Config{GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
		return leaves.Get(hello.ServerName)
	}}
	u.secure.StartTLS()
	t.Cleanup(u.secure.Close)
	u.plainPort = listenerPort(u.plain.Listener.Addr())
	u.securePort = listenerPort(u.secure.Listener.Addr())
	return u
}

func listenerPort(a net.Addr) string { return strconv.Itoa(a.(*net.TCPAddr).Port) }

// options are opts with the simulator's resolver and roots.
func (u *simUpstream) options(opts Options) Options {
	opts.Resolver = loopbackResolver{}
	opts.Transport.RootCAs = u.roots
	return opts
}

// absoluteURL finds the scheme, host and port of absolute URLs.
var absoluteURL = regexp.MustCompile(`\b(https?)://([A-Za-z0-9.-]+)(:[0-9]+)?`)

// at rewrites the absolute URLs in text (a rule file, a URL) to reach the
// simulator: no port, or the scheme's default one, becomes its listener's
// port.
func (u *simUpstream) at(text string) string {
	return absoluteURL.ReplaceAllStringFunc(text, func(m string) string {
		parts := absoluteURL.FindStringSubmatch(m)
		scheme, host, p := parts[1], parts[2], parts[3]
		switch {
		case scheme == "http" && (p == "" || p == ":80"):
			p = ":" + u.plainPort
		case scheme == "https" && (p == "" || p == ":443"):
			p = ":" + u.securePort
		}
		return scheme + "://" + host + p
	})
}

// handler hands each request to sim, with the URL it was sent to.
func (u *simUpstream) handler(sim http.RoundTripper) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.RequestURI = ""
		r.URL.Scheme, r.URL.Host = "http", u.withoutPort(r.Host)
		if r.TLS != nil {
			r.URL.Scheme = "https"
		}
		r.Host = r.URL.Host
		// The body is read whole first, so that the server notices a
		// client that goes away (and cancels r's context) while sim waits.
		body, err := io.ReadAll(r.Body)
		if err != nil {
			panic(http.ErrAbortHandler)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		resp, err := sim.RoundTrip(r)
		if err != nil {
			panic(http.ErrAbortHandler) // closes the connection, answering nothing
		}
		for k, vs := range resp.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(resp.StatusCode)
		if resp.Body != nil {
			io.Copy(w, resp.Body)
			resp.Body.Close()
		}
	})
}

// withoutPort is hostport without the simulator's port.
func (u *simUpstream) withoutPort(hostport string) string {
	host, p, err := net.SplitHostPort(hostport)
	if err != nil || (p != u.plainPort && p != u.securePort) {
		return hostport
	}
	return host
}

// loopbackResolver resolves every name to 127.0.0.1.
type loopbackResolver struct{}

func (loopbackResolver) LookupNetIP(_ context.Context, network, _ string) ([]netip.Addr, error) {
	if network == "ip6" {
		return []netip.Addr{netip.IPv6Loopback()}, nil
	}
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}
