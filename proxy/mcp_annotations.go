package proxy

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
// id) as it streams by to the agent; nil id observes nothing.
func (a *annotations) observe(resp *http.Response, id json.RawMessage) {
	if id == nil || resp.StatusCode != http.StatusOK || resp.Body == nil {
		return
	}
	resp.Body = &listingBody{rc: resp.Body, done: func(b []byte) {
		raw, err := mcp.ReadResponse(resp.Header.Get("Content-Type"), bytes.NewReader(b), id, maxListing)
		if err != nil {
			return
		}
		if r, err := mcp.ParseResponse(raw); err == nil && r.Error == nil {
			a.record(mcp.ToolAnnotations(r.Result))
		}
	}}
}

// listingBody copies what the agent reads, up to maxListing, and hands it
// to done at the end of the body.
type listingBody struct {
	rc   io.ReadCloser
	buf  bytes.Buffer
	done func([]byte)
	over bool
}

func (l *listingBody) Read(p []byte) (int, error) {
	n, err := l.rc.Read(p)
	if !l.over {
		if l.buf.Len()+n > maxListing {
			l.over = true
			l.buf = bytes.Buffer{}
		} else {
			l.buf.Write(p[:n])
		}
	}
	if err == io.EOF && l.done != nil && !l.over {
		l.done(l.buf.Bytes())
		l.done = nil
	}
	return n, err
}

func (l *listingBody) Close() error { return l.rc.Close() }
