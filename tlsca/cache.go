package tlsca

import (
	"container/list"
	"crypto/tls"
	"sync"
	"time"
)

// Cache is a bounded LRU of leaf certificates by host name, safe for
// concurrent use. Concurrent misses for one host sign once.
type Cache struct {
	ca  *CA
	max int

	mu      sync.Mutex
	entries map[string]*list.Element
	order   *list.List // front = most recently used
	pending map[string]*certCall
}

type certEntry struct {
	host string
	cert *tls.Certificate
}

type certCall struct {
	done chan struct{}
	cert *tls.Certificate
	err  error
}

// NewCache returns a cache of at most max leaves signed by ca; max <= 0
// means 1024.
func NewCache(ca *CA, max int) *Cache {
	if max <= 0 {
		max = 1024
	}
	return &Cache{ca: ca, max: max, entries: map[string]*list.Element{}, order: list.New(), pending: map[string]*certCall{}}
}

// Get returns a certificate for host valid for at least another hour,
// signing one on a miss.
func (c *Cache) Get(host string) (*tls.Certificate, error) {
	c.mu.Lock()
	if el, ok := c.entries[host]; ok {
		e := el.Value.(*certEntry)
		if time.Until(e.cert.Leaf.NotAfter) > time.Hour {
			c.order.MoveToFront(el)
			c.mu.Unlock()
			return e.cert, nil
		}
		c.order.Remove(el)
		delete(c.entries, host)
	}
	if call, ok := c.pending[host]; ok {
		c.mu.Unlock()
		<-call.done
		return call.cert, call.err
	}
	call := &certCall{done: make(chan struct{})}
	c.pending[host] = call
	c.mu.Unlock()

	call.cert, call.err = c.ca.Leaf(host)

	c.mu.Lock()
	delete(c.pending, host)
	if call.err == nil {
		c.entries[host] = c.order.PushFront(&certEntry{host: host, cert: call.cert})
		for c.order.Len() > c.max {
			last := c.order.Back()
			c.order.Remove(last)
			delete(c.entries, last.Value.(*certEntry).host)
		}
	}
	c.mu.Unlock()
	close(call.done)
	return call.cert, call.err
}
