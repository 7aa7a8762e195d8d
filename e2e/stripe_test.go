package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"github.com/toolguard/toolguard/internal/skipped"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v82"
)

// stripeMockBinary finds stripe-mock: $TOOLGUARD_STRIPE_MOCK, the
// repository's bin/ (where .ci/run installs it), or PATH. Missing, the
// test fails in CI and skips elsewhere.
func stripeMockBinary(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("TOOLGUARD_STRIPE_MOCK"), filepath.Join("..", "bin", "stripe-mock")} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			abs, _ := filepath.Abs(p)
			return abs
		}
	}
	if p, err := exec.LookPath("stripe-mock"); err == nil {
		return p
	}
	const how = "stripe-mock not found: GOBIN=$PWD/bin go install github.com/stripe/stripe-mock@v0.195.0"
	if os.Getenv("CI") != "" {
		t.Fatal(how)
	}
	skipped.Skip(t, "stripe-mock (bin/stripe-mock)", how)
	return ""
}

// startStripeMock runs stripe-mock on free loopback ports and returns its
// HTTP address, read from the line it prints when it listens.
func startStripeMock(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(stripeMockBinary(t), "-http-addr", "127.0.0.1:", "-https-addr", "127.0.0.1:")
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatalf("start stripe-mock: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait(); pw.Close() })
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "Listening for HTTP at address: "); ok {
				addr <- a
			}
		}
	}()
	select {
	case a := <-addr:
		return a
	case <-time.After(30 * time.Second):
		t.Fatal("stripe-mock did not listen")
		return ""
	}
}

// dropFirst is the SDK's transport: the first request to path reaches
// toolguard, but its answer is lost on the way back (a network error), so
// the SDK retries it. It records the SDK's Idempotency-Key of every send.
// With path "" it drops nothing.
type dropFirst struct {
	base    http.RoundTripper
	path    string
	dropped atomic.Bool
	mu      sync.Mutex
	keys    map[string][]string // path → the Idempotency-Key of each send
}

func (d *dropFirst) RoundTrip(r *http.Request) (*http.Response, error) {
	d.mu.Lock()
	d.keys[r.URL.Path] = append(d.keys[r.URL.Path], r.Header.Get("Idempotency-Key"))
	d.mu.Unlock()
	resp, err := d.base.RoundTrip(r)
	if err == nil && r.URL.Path == d.path && d.dropped.CompareAndSwap(false, true) {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return nil, errors.New("connection reset (answer lost on the way back)")
	}
	return resp, err
}

func (d *dropFirst) sends(path string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.keys[path]
}

// guardedLinesOf counts toolguard's decision lines for a route.
func guardedLinesOf(p *proc, route string) int {
	n := 0
	for _, l := range strings.Split(p.logs.String(), "\n") {
		if strings.Contains(l, `"msg":"guarded call"`) && strings.Contains(l, `"route":"`+route+`"`) {
			n++
		}
	}
	return n
}

// The Stripe Go SDK against stripe-mock through the real toolguard, over
// HTTP and HTTPS (a TLS front with a proper certificate, trusted by
// toolguard through upstream.ca_file). The SDK's own idempotency keys and
// network retries do not defeat intent dedupe; a file upload is guarded;
// a hold reaches the SDK as a *stripe.Error it does not retry; reads pass
// through byte for byte.
func TestStripeSDK(t *testing.T) {
	mock := startStripeMock(t)
	rulesYAML, err := os.ReadFile(filepath.Join("testdata", "stripe", "stripe.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, useTLS := range []bool{false, true} {
		name := "http"
		if useTLS {
			name = "https"
		}
		t.Run(name, func(t *testing.T) {
			front := newMockFront(t, mock, useTLS)
			host := strings.TrimPrefix(strings.TrimPrefix(front.URL, "http://"), "https://")
			s := newSetup(t, map[string]string{"stripe.yaml": strings.ReplaceAll(string(rulesYAML), "HOST", host)})
			if useTLS {
				up := &upstream{Server: front.Server}
				s.args = append(s.args, "--config", writeConfig(t, s.dir, "upstream:\n  ca_file: "+up.caPEM(t, s.dir)+"\n"))
			}
			p := s.start(t)
			transport := &dropFirst{base: p.client(t).Transport, path: "/v1/customers", keys: map[string][]string{}}
			sdk := stripeSDK(&http.Client{Transport: transport, Timeout: 30 * time.Second}, front.URL, 2)
			ctx := context.Background()

			t.Run("idempotency keys and retries", func(t *testing.T) {
				params := func() *stripe.CustomerCreateParams {
					return &stripe.CustomerCreateParams{Email: stripe.String("ana@example.com"), Name: stripe.String("Ana")}
				}
				c1, err := sdk.V1Customers.Create(ctx, params())
				if err != nil {
					t.Fatalf("first create: %v", err)
				}
				// The first answer was lost: the SDK retried on its own key,
				// and toolguard answered the retry from the journal.
				if keys := transport.sends("/v1/customers"); len(keys) != 2 || keys[0] != keys[1] || keys[0] == "" {
					t.Fatalf("SDK sends of the first create: %q, want two on one key", keys)
				}
				if o := c1.LastResponse.Header.Get("Toolguard-Outcome"); o != "replayed" {
					t.Errorf("the SDK's retry: outcome %q, want replayed", o)
				}
				// A second call of the same intent: a fresh SDK key, same intent.
				c2, err := sdk.V1Customers.Create(ctx, params())
				if err != nil {
					t.Fatalf("second create: %v", err)
				}
				if keys := transport.sends("/v1/customers"); len(keys) != 3 || keys[2] == keys[0] {
					t.Fatalf("SDK sends: %q, want a third on a fresh key", keys)
				}
				if c2.ID != c1.ID || c2.LastResponse.Header.Get("Toolguard-Outcome") != "replayed" {
					t.Errorf("second create: %s (%q), want %s replayed", c2.ID, c2.LastResponse.Header.Get("Toolguard-Outcome"), c1.ID)
				}
				if n := front.count("POST /v1/customers"); n != 1 {
					t.Fatalf("creates forwarded to stripe-mock = %d, want 1", n)
				}
			})

			t.Run("file upload", func(t *testing.T) {
				upload := func() (*stripe.File, error) {
					return sdk.V1Files.Create(ctx, &stripe.FileCreateParams{
						Purpose:    stripe.String(string(stripe.FilePurposeDisputeEvidence)),
						Filename:   stripe.String("evidence.pdf"),
						FileReader: strings.NewReader("%PDF-1.4 the receipt"),
					})
				}
				f1, err := upload()
				if err != nil {
					t.Fatalf("first upload: %v", err)
				}
				f2, err := upload()
				if err != nil {
					t.Fatalf("second upload: %v", err)
				}
				if f1.LastResponse.Header.Get("Toolguard-Key") == "" || f2.ID != f1.ID || f2.LastResponse.Header.Get("Toolguard-Outcome") != "replayed" {
					t.Errorf("uploads: %s then %s (%q), want the second replayed", f1.ID, f2.ID, f2.LastResponse.Header.Get("Toolguard-Outcome"))
				}
				if n := front.count("POST /v1/files"); n != 1 {
					t.Fatalf("uploads forwarded to stripe-mock = %d, want 1", n)
				}
			})

			t.Run("hold", func(t *testing.T) {
				_, err := sdk.V1Refunds.Create(ctx, &stripe.RefundCreateParams{Charge: stripe.String("ch_1")})
				var se *stripe.Error
				if !errors.As(err, &se) || se.Type != stripe.ErrorTypeAPI || se.Code != "toolguard_awaiting_approval" || se.HTTPStatusCode != http.StatusConflict {
					t.Fatalf("error = %#v, want a decoded Stripe api_error toolguard_awaiting_approval", err)
				}
				if n := len(transport.sends("/v1/refunds")); n != 1 {
					t.Errorf("the SDK sent the refund %d times, want 1 (no retry of a hold)", n)
				}
				// The decision line is written as the answer goes out.
				eventually(t, "the refund's decision line", func() bool { return guardedLinesOf(p, "create_refund") > 0 })
				if n := guardedLinesOf(p, "create_refund"); n != 1 {
					t.Errorf("toolguard decision lines for the refund = %d, want 1", n)
				}
				if n := front.count("POST /v1/refunds"); n != 0 {
					t.Fatalf("refunds forwarded to stripe-mock = %d, want 0", n)
				}
			})

			t.Run("read passes through", func(t *testing.T) {
				c, err := sdk.V1Customers.Retrieve(ctx, "cus_read1", nil)
				if err != nil {
					t.Fatalf("retrieve: %v", err)
				}
				direct := directGet(t, front, "/v1/customers/cus_read1")
				if string(c.LastResponse.RawJSON) != direct {
					t.Errorf("through toolguard:\n%s\ndirect:\n%s", c.LastResponse.RawJSON, direct)
				}
				if c.LastResponse.Header.Get("Toolguard-Key") != "" {
					t.Errorf("a read was guarded")
				}
			})

			// Last: it kills this toolguard. stripe-mock keeps no keys, so the
			// re-send is seen at the front: on the intent's key, not on the
			// fresh one the SDK mints for the new call (real Stripe dedupes it).
			t.Run("kill after the effect", func(t *testing.T) {
				params := &stripe.CustomerCreateParams{Email: stripe.String("crash@example.com"), Name: stripe.String("Cy")}
				hold := front.holdNext("crash%40example.com")
				done := make(chan struct{})
				go func() {
					defer close(done)
					stripeSDK(p.client(t), front.URL, 0).V1Customers.Create(ctx, params) // its answer is lost
				}()
				<-hold.reached
				p.kill()
				close(hold.release)
				<-done
				before := len(front.idempotencyKeys("POST /v1/customers"))

				sent := &dropFirst{base: s.start(t).client(t).Transport, keys: map[string][]string{}} // path "": drops nothing
				c, err := stripeSDK(&http.Client{Transport: sent, Timeout: 30 * time.Second}, front.URL, 2).V1Customers.Create(ctx, params)
				if err != nil {
					t.Fatalf("the call after the restart: %v", err)
				}
				key := c.LastResponse.Header.Get("Toolguard-Key")
				if o := c.LastResponse.Header.Get("Toolguard-Outcome"); o != "recovered" || c.ID == "" {
					t.Errorf("after the restart: %q %q, want a recovered customer", o, c.ID)
				}
				keys := front.idempotencyKeys("POST /v1/customers")
				sdkKeys := sent.sends("/v1/customers")
				if len(keys) != before+1 || keys[before-1] != key || keys[before] != key || len(sdkKeys) != 1 || sdkKeys[0] == key {
					t.Fatalf("Idempotency-Key at the front %q (toolguard key %s, the SDK's %q), want the interrupted send and one re-send on toolguard's key",
						keys, key, sdkKeys)
				}
			})
		})
	}
}

// stripeSDK is a stripe-go client of url through httpClient.
func stripeSDK(httpClient *http.Client, url string, retries int64) *stripe.Client {
	return stripe.NewClient("sk_test_123", stripe.WithBackends(stripe.NewBackendsWithConfig(&stripe.BackendConfig{
		HTTPClient:        httpClient,
		URL:               stripe.String(url),
		MaxNetworkRetries: stripe.Int64(retries),
		LeveledLogger:     &stripe.LeveledLogger{Level: stripe.LevelNull},
	})))
}

// directGet reads path from the front without toolguard.
func directGet(t *testing.T, front *mockFront, path string) string {
	t.Helper()
	pool := x509.NewCertPool()
	if front.Certificate() != nil {
		pool.AddCert(front.Certificate())
	}
	c := &http.Client{Transport: &http.Transport{Proxy: nil, TLSClientConfig: &tls.Config{RootCAs: pool}}}
	req, _ := http.NewRequest("GET", front.URL+path, nil)
	req.Header.Set("Authorization", "Bearer sk_test_123")
	_, body := do(t, c, req)
	return body
}
