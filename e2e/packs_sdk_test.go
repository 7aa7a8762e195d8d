package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// sdkWrite is one write a provider's official SDK makes, with fixed
// arguments: call makes it and returns the HTTP answer the SDK got (nil
// when it got none) and the SDK's error.
type sdkWrite struct {
	name string
	call func(context.Context) (*http.Response, error)
}

// twice is what became of an sdkWrite made twice.
type twice struct {
	name    string
	route   string // "METHOD /path" of the write
	guarded bool   // the first answer carried a Toolguard-Key
	outcome string // the second answer's Toolguard-Outcome
	reached int    // writes that reached the mock during the two calls
	err     error  // the first error of either call
}

// callTwice makes each write twice, the same intent each time, as an
// agent does that retries, and counts with mockWrites (the writes that
// reached the provider's mock so far) how many of the two reached it.
func callTwice(t *testing.T, writes []sdkWrite, mockWrites func() int) []twice {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := make([]twice, 0, len(writes))
	for _, w := range writes {
		r := twice{name: w.name}
		before := mockWrites()
		var first *http.Response
		for i := range 2 {
			resp, err := w.call(ctx)
			if err != nil && r.err == nil {
				r.err = err
			}
			if resp == nil {
				continue
			}
			if i == 0 {
				first = resp
				r.guarded = resp.Header.Get("Toolguard-Key") != ""
			} else {
				r.outcome = resp.Header.Get("Toolguard-Outcome")
			}
		}
		r.reached = mockWrites() - before
		if first != nil {
			r.route = first.Request.Method + " " + first.Request.URL.Path
		}
		out = append(out, r)
	}
	return out
}

// checkOnceEach logs what the writes made twice did (the harness's
// numbers) and fails for each write whose SDK call failed or that reached
// the provider more than once.
func checkOnceEach(t *testing.T, provider string, results []twice) {
	t.Helper()
	var guarded, once, more int
	var unguarded, repeated []string
	for _, r := range results {
		if r.guarded {
			guarded++
		} else {
			unguarded = append(unguarded, r.name)
		}
		switch {
		case r.reached == 1:
			once++
		case r.reached > 1:
			more++
			repeated = append(repeated, r.name)
		}
	}
	t.Logf("%s: %d distinct writes, each made twice: %d guarded, %d reached the provider once, %d more than once",
		provider, len(results), guarded, once, more)
	if len(unguarded) > 0 {
		t.Logf("%s writes not guarded: %s", provider, strings.Join(unguarded, ", "))
	}
	if len(repeated) > 0 {
		t.Logf("%s writes that reached the provider twice: %s", provider, strings.Join(repeated, ", "))
	}
	for _, r := range results {
		if r.err != nil {
			t.Errorf("%s: %v", r.name, r.err)
		}
		if r.reached != 1 {
			t.Errorf("%s (%s): reached the provider %d times, want 1 (guarded %v, second answer %q)",
				r.name, r.route, r.reached, r.guarded, r.outcome)
		}
	}
}

// clientTrusting is p's client (toolguard as HTTP(S) proxy, its CA
// trusted) that also trusts the certificate of servers, as a client trusts
// a provider's certificate on the connections toolguard tunnels.
func clientTrusting(t *testing.T, p *proc, servers ...*httptest.Server) *http.Client {
	t.Helper()
	c := p.client(t)
	tr := c.Transport.(credentialed).rt.(*http.Transport)
	for _, s := range servers {
		tr.TLSClientConfig.RootCAs.AddCert(s.Certificate())
	}
	return c
}
