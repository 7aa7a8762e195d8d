package bolt

import (
	"bytes"
	"sync"

	"github.com/toolguard/toolguard/journal"
)

// Read cache.
//
// A duplicate of a finished call is answered from its step, read with Get:
// a read transaction, two B-tree lookups and a JSON decode, which is most
// of what a replay costs. So Get keeps the steps it decodes in a small
// cache, and every writer keeps it coherent with gen, under mu:
//
//   - before its transaction, a writer counts itself in writing, bumps gen
//     and drops the keys it may write (the committer: the keys of its
//     batch; Sweep: everything);
//   - after its transaction has committed or failed, it counts itself out
//     and bumps gen again;
//   - Get inserts what it read only if no write was under way when it began
//     and gen has not moved since.
//
// So an entry is never older than the last commit of its key: a write
// drops it before it becomes visible, and a read that may have seen the
// state before a write — it began before the write, or while the write was
// under way — cannot insert. Entries
// are copied in and out, so callers cannot change them. The cache holds at
// most cacheBytes of step records, in two generations: when the current
// one is full it becomes the old one, and hits in the old one move back.
type readCache struct {
	mu       sync.Mutex
	gen      uint64
	writing  int // writes begun and not ended
	cur, old map[string]cached
	curBytes int
}

type cached struct {
	step journal.Step
	size int
}

// cacheBytes bounds the cache: about what the records of a few thousand
// steps take.
const cacheBytes = 4 << 20

func (c *readCache) get(key string) (journal.Step, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.cur[key]
	if !ok {
		if e, ok = c.old[key]; !ok {
			return journal.Step{}, false
		}
		delete(c.old, key)
		c.add(key, e)
	}
	return copyStep(&e.step), true
}

// generation is read before a read transaction that may fill the cache;
// ok is false while a write is under way, and what is read then must not be
// cached.
func (c *readCache) generation() (gen uint64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen, c.writing == 0
}

// put caches s, read at generation gen, unless a write began since.
func (c *readCache) put(gen uint64, s *journal.Step) {
	size := 512 + len(s.Key)
	if s.Response != nil {
		size += len(s.Response.Body)
	}
	if size > cacheBytes/16 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	c.add(s.Key, cached{step: copyStep(s), size: size})
}

func (c *readCache) add(key string, e cached) {
	if c.cur == nil || c.curBytes+e.size > cacheBytes/2 {
		c.old, c.cur, c.curBytes = c.cur, map[string]cached{}, 0
	}
	c.cur[key] = e
	c.curBytes += e.size
}

// begin starts a write of keys; all drops every entry.
func (c *readCache) begin(keys []string, all bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writing++
	c.gen++
	if all {
		c.cur, c.old, c.curBytes = nil, nil, 0
		return
	}
	for _, k := range keys {
		delete(c.cur, k)
		delete(c.old, k)
	}
}

// end marks the end of a write begun with begin.
func (c *readCache) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writing--
	c.gen++
}

// copyStep copies s deep enough that the copy shares nothing a caller may
// change: the response's header and body.
func copyStep(s *journal.Step) journal.Step {
	out := *s
	if s.Response != nil {
		r := *s.Response
		r.Header = s.Response.Header.Clone()
		r.Body = bytes.Clone(s.Response.Body)
		out.Response = &r
	}
	return out
}
