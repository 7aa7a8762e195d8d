package verification

import (
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/toolguard/toolguard/rules"
	"github.com/toolguard/toolguard/verifiers"
)

// Credentials holds the background work resumed after a restart until its
// caller's credential is available again: the credential was held in
// memory only, so the work waits for the same caller's next guarded
// request to lend it. The zero value is ready to use.
type Credentials struct {
	n  atomic.Int64 // waiting registrations; 0 keeps Lend lock-free
	mu sync.Mutex
	m  map[string][]chan http.Header
}

// Wait registers for the credential of the caller identified by mac (see
// journal.Step.CredentialMAC); the channel receives it once.
func (p *Credentials) Wait(mac string) chan http.Header {
	ch := make(chan http.Header, 1)
	p.mu.Lock()
	if p.m == nil {
		p.m = map[string][]chan http.Header{}
	}
	p.m[mac] = append(p.m[mac], ch)
	p.mu.Unlock()
	p.n.Add(1)
	return ch
}

// Lend hands a request's credential headers (those api names) to the
// registrations waiting for its caller.
func (p *Credentials) Lend(mac string, api *rules.API, h http.Header) {
	if p.n.Load() == 0 || mac == "" {
		return
	}
	p.mu.Lock()
	waiting := p.m[mac]
	delete(p.m, mac)
	p.mu.Unlock()
	if len(waiting) == 0 {
		return
	}
	p.n.Add(-int64(len(waiting)))
	creds := verifiers.CredentialHeaders(api, h)
	for _, ch := range waiting {
		ch <- creds
	}
}

// Forget drops a registration that is no longer waited for.
func (p *Credentials) Forget(mac string, ch chan http.Header) {
	p.mu.Lock()
	defer p.mu.Unlock()
	list := p.m[mac]
	for i, c := range list {
		if c == ch {
			p.m[mac] = append(list[:i], list[i+1:]...)
			p.n.Add(-1)
			return
		}
	}
}
