package proxy

import (
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/toolguard/toolguard/rules"
	"github.com/toolguard/toolguard/verifiers"
)

// parking holds verifications resumed after a restart until their
// caller's credential is available again: it was held in memory only, so
// they wait for the same caller's next guarded request to lend it.
type parking struct {
	n  atomic.Int64 // waiting verifications; 0 keeps the hot path lock-free
	mu sync.Mutex
	m  map[string][]chan http.Header
}

// wait registers for the credential of the caller identified by mac.
func (p *parking) wait(mac string) chan http.Header {
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

// lend hands a request's credential headers to the verifications waiting
// for its caller.
func (p *parking) lend(mac string, api *rules.API, h http.Header) {
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

// forget drops a registration that timed out.
func (p *parking) forget(mac string, ch chan http.Header) {
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
