package e2e

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sort"
	"sync"
	"testing"
)

// mockFront is a reverse proxy before a provider mock that speaks plain
// HTTP (stripe-mock, Prism), over plain HTTP or TLS with httptest's
// certificate (valid for 127.0.0.1, which stripe-mock's own is not), that
// counts the requests reaching it: what reaches the mock is the provider's
// effects.
type mockFront struct {
	*httptest.Server
	mu   sync.Mutex
	seen map[string]int      // "METHOD /path" → requests
	keys map[string][]string // "METHOD /path" → the Idempotency-Key of each request
	hold *frontHold
	// adapt, when set before the first request, adapts each request to
	// what the mock understands (e.g. an Accept header Prism cannot match).
	adapt func(*http.Request)
}

// frontHold holds the mock's answer to the first request whose body
// contains match: reached is closed once the mock has answered (the
// effect is done), and the answer goes back only after release is closed.
type frontHold struct {
	match            string
	reached, release chan struct{}
}

func newMockFront(t *testing.T, mockAddr string, useTLS bool) *mockFront {
	f := &mockFront{seen: map[string]int{}, keys: map[string][]string{}}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: mockAddr})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		f.mu.Lock()
		f.seen[r.Method+" "+r.URL.Path]++
		f.keys[r.Method+" "+r.URL.Path] = append(f.keys[r.Method+" "+r.URL.Path], r.Header.Get("Idempotency-Key"))
		hold := f.hold
		if hold != nil && bytes.Contains(body, []byte(hold.match)) {
			f.hold = nil
		} else {
			hold = nil
		}
		f.mu.Unlock()
		if f.adapt != nil {
			f.adapt(r)
		}
		if hold == nil {
			rp.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		rp.ServeHTTP(rec, r)
		close(hold.reached)
		<-hold.release
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	})
	if useTLS {
		f.Server = httptest.NewTLSServer(h)
	} else {
		f.Server = httptest.NewServer(h)
	}
	t.Cleanup(f.Close)
	return f
}

// host is the front's host:port, as rule files name it.
func (f *mockFront) host() string { return f.Listener.Addr().String() }

// holdNext arms a hold of the next request whose body contains match.
func (f *mockFront) holdNext(match string) *frontHold {
	h := &frontHold{match: match, reached: make(chan struct{}), release: make(chan struct{})}
	f.mu.Lock()
	f.hold = h
	f.mu.Unlock()
	return h
}

func (f *mockFront) idempotencyKeys(route string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.keys[route]...)
}

func (f *mockFront) count(route string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seen[route]
}

// writeCount is how many writes (POST, PUT, PATCH, DELETE) reached the
// mock.
func (f *mockFront) writeCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for route, c := range f.seen {
		if isWriteRoute(route) {
			n += c
		}
	}
	return n
}

// frontWrite is one write that reached the mock: its route and the
// Idempotency-Key it carried.
type frontWrite struct{ route, idempotencyKey string }

// writes lists every POST, PUT, PATCH and DELETE that reached the mock,
// sorted by route.
func (f *mockFront) writes() []frontWrite {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []frontWrite
	for route, keys := range f.keys {
		if !isWriteRoute(route) {
			continue
		}
		for _, k := range keys {
			out = append(out, frontWrite{route, k})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].route < out[j].route })
	return out
}

// isWriteRoute says whether a "METHOD /path" route is a write.
func isWriteRoute(route string) bool {
	for _, m := range []string{"POST ", "PUT ", "PATCH ", "DELETE "} {
		if len(route) > len(m) && route[:len(m)] == m {
			return true
		}
	}
	return false
}
