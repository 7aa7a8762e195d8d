package servers

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"sync"

	"github.com/toolguard/toolguard/mcp"
)

// annotations remembers what tools/list said about a server's tools. What
// a server once called destructive stays so; a tool is read-only only
// while every listing said so.
type annotations struct {
	mu sync.Mutex
	m  map[string]toolHints
}

type toolHints struct {
	seen, readOnlyHint, destructiveHint bool
}

// readOnly: every listing marked the tool readOnlyHint: true.
func (h toolHints) readOnly() bool { return h.seen && h.readOnlyHint && !h.destructiveHint }

// destructive: some listing marked the tool destructiveHint: true (and
// not read-only).
func (h toolHints) destructive() bool { return h.destructiveHint }

func (a *annotations) get(tool string) toolHints {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.m[tool]
}

func (a *annotations) record(list map[string]mcp.Annotations) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = make(map[string]toolHints)
	}
	for name, ann := range list {
		prev := a.m[name]
		ro := ann.ReadOnly != nil && *ann.ReadOnly
		destr := ann.Destructive != nil && *ann.Destructive && !ro
		a.m[name] = toolHints{
			seen:            true,
			readOnlyHint:    ro && (!prev.seen || prev.readOnlyHint),
			destructiveHint: destr || prev.destructiveHint,
		}
	}
}

// maxListing bounds the tools/list answer read for annotations.
const maxListing = 4 << 20

// observe reads the annotations of a tools/list answer (the request with
// id) as it streams by to the agent; nil id observes nothing. They are
// recorded before the bytes that complete the answer reach the agent, so
// that a tools/call sent after the listing finds them.
func (a *annotations) observe(resp *http.Response, id json.RawMessage) {
	if id == nil || resp.StatusCode != http.StatusOK || resp.Body == nil {
		return
	}
	ct := resp.Header.Get("Content-Type")
	resp.Body = &listingBody{rc: resp.Body, done: func(b []byte) bool {
		raw, err := mcp.ReadResponse(ct, bytes.NewReader(b), id, maxListing)
		if err != nil {
			return false
		}
		r, err := mcp.ParseResponse(raw)
		if err != nil {
			return false
		}
		if r.Error == nil {
			a.record(mcp.ToolAnnotations(r.Result))
		}
		return true
	}}
}

// listingBody copies what the agent reads, up to maxListing, and offers it
// to done whenever a read may have completed the answer, until done
// accepts it.
type listingBody struct {
	rc   io.ReadCloser
	buf  bytes.Buffer
	done func([]byte) bool
}

func (l *listingBody) Read(p []byte) (int, error) {
	n, err := l.rc.Read(p)
	if l.done == nil {
		return n, err
	}
	if l.buf.Len()+n > maxListing {
		l.done, l.buf = nil, bytes.Buffer{}
		return n, err
	}
	l.buf.Write(p[:n])
	if bytes.IndexByte(p[:n], '}') >= 0 || err != nil {
		if l.done(l.buf.Bytes()) {
			l.done, l.buf = nil, bytes.Buffer{}
		}
	}
	return n, err
}

func (l *listingBody) Close() error { return l.rc.Close() }
