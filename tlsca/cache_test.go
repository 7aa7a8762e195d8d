package tlsca

import (
	"crypto"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// countingSigner counts the leaves a CA signs, and fails them while fail
// is set.
type countingSigner struct {
	crypto.Signer
	signed atomic.Int64
	fail   atomic.Bool
}

func (s *countingSigner) Sign(r io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	if s.fail.Load() {
		return nil, errors.New("the signer is unplugged")
	}
	s.signed.Add(1)
	return s.Signer.Sign(r, digest, opts)
}

func countingCA(t *testing.T, ca *CA) (*CA, *countingSigner) {
	t.Helper()
	s := &countingSigner{Signer: ca.Key}
	c := *ca
	c.Key = s
	return &c, s
}

// Concurrent misses for one host sign once, and all get that leaf.
func TestCacheSignsOncePerHost(t *testing.T) {
	base, err := Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ca, signer := countingCA(t, base)
	c := NewCache(ca, 0)
	const n = 16
	got := make([]any, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			cert, err := c.Get("api.example.com")
			if err != nil {
				t.Error(err)
			}
			got[i] = cert
		})
	}
	wg.Wait()
	for i := range n {
		if got[i] != got[0] {
			t.Fatalf("Get %d returned another certificate", i)
		}
	}
	if s := signer.signed.Load(); s != 1 {
		t.Errorf("signed %d leaves, want 1", s)
	}
}

// The cache keeps at most max leaves, dropping the least recently used.
func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	base, err := Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ca, signer := countingCA(t, base)
	c := NewCache(ca, 2)
	for _, host := range []string{"a.test", "b.test", "a.test", "c.test", "a.test", "b.test"} {
		if _, err := c.Get(host); err != nil {
			t.Fatal(err)
		}
	}
	// a, b, (a hit), c evicts b, (a hit), b again evicts c: four signed.
	if s := signer.signed.Load(); s != 4 {
		t.Errorf("signed %d leaves, want 4", s)
	}
}

// A leaf within an hour of its expiry is signed again; a failed signing
// is returned and not kept.
func TestCacheRenewsAndRetries(t *testing.T) {
	ca, signer := countingCA(t, shortLivedCA(t, 30*time.Minute)) // every leaf expires within the hour
	c := NewCache(ca, 0)
	for range 2 {
		if _, err := c.Get("a.test"); err != nil {
			t.Fatal(err)
		}
	}
	if s := signer.signed.Load(); s != 2 {
		t.Errorf("signed %d leaves, want 2 (the first was about to expire)", s)
	}
	signer.fail.Store(true)
	if _, err := c.Get("b.test"); err == nil {
		t.Fatal("Get with a failing signer succeeded")
	}
	signer.fail.Store(false)
	if cert, err := c.Get("b.test"); err != nil || cert == nil {
		t.Fatalf("Get after the failure: %v", err)
	}
}
