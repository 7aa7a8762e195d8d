package gateway

import (
	"io"
	"net/http"

	"github.com/toolguard/toolguard/internal/eventstream"
	"github.com/toolguard/toolguard/metrics"
)

// Streamed answers. A guarded tools/call is answered once its outcome is
// durable. Meanwhile the server may send messages before its response:
// progress notifications, and — in the 2025 revisions — requests it makes
// of the client (elicitation, sampling) that the tool waits for. When the
// agent accepts an event stream, those are relayed to it as they come, and
// the response follows as the stream's last event once it is journaled;
// the agent answers the server's requests with POSTs of its own, which
// pass through. Without such messages, or for an agent that accepts only
// JSON, the answer is a single JSON response.

// relayed is a message the server sent before its response.
type relayed struct {
	key string
	msg []byte
}

// streamTo runs t through the pipeline on the calling goroutine, and
// answers on w with an event stream as soon as the server relays a
// message: the messages as they come, flushed, then the pipeline's answer
// as the last event. When the pipeline answers before any message, nothing
// is written and its answer is returned. A write that fails (the agent has
// gone) ends the writing, not the call.
func (g *Gateway) streamTo(w http.ResponseWriter, t Tool) (resp *http.Response, wrote bool) {
	rc := http.NewResponseController(w)
	var werr error
	write := func(data []byte) {
		if werr == nil {
			if _, werr = w.Write(eventstream.Event(data)); werr == nil {
				werr = rc.Flush()
			}
		}
	}
	resp = g.cfg.Pipeline.Guard(t, func(key string, msg []byte) {
		if !wrote {
			wrote = true
			h := w.Header()
			h.Set("Content-Type", eventstream.ContentType)
			h.Set("Cache-Control", "no-cache")
			// The call was sent; the last event is the authoritative
			// answer (a hold result, should the outcome turn out unknown).
			h.Set(headerKey, key)
			h.Set(headerOutcome, metrics.OutcomeForwarded)
			w.WriteHeader(http.StatusOK)
		}
		write(msg)
	})
	if !wrote {
		return resp, false
	}
	write(batchEntry(resp, t.Call.ID))
	return nil, true
}

// streaming runs t through the pipeline and answers with an event stream
// as soon as the server relays a message, or with the pipeline's answer
// when it comes first. done runs when the call has finished.
func (g *Gateway) streaming(t Tool, done func()) *http.Response {
	events := make(chan relayed, 16)
	final := make(chan *http.Response, 1)
	go func() {
		resp := g.cfg.Pipeline.Guard(t, func(key string, msg []byte) { events <- relayed{key, msg} })
		close(events)
		done()
		final <- resp
	}()
	first, ok := <-events
	if !ok {
		return <-final
	}
	pr, pw := io.Pipe()
	go streamAnswer(pw, first.msg, events, final, t.Call.ID)
	h := http.Header{"Content-Type": {"text/event-stream"}, "Cache-Control": {"no-cache"}}
	h.Set(headerKey, first.key)
	// The call was sent; the last event is the authoritative answer (a
	// hold result, should the outcome turn out unknown).
	h.Set(headerOutcome, metrics.OutcomeForwarded)
	return &http.Response{
		Status: "200 OK", StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: pr, ContentLength: -1, Request: t.In,
	}
}

// streamAnswer writes the relayed messages, then the final answer, as SSE
// events. When the agent has gone it keeps draining, so that the call
// runs to its recorded outcome.
func streamAnswer(pw *io.PipeWriter, first []byte, events <-chan relayed, final <-chan *http.Response, id []byte) {
	var werr error
	write := func(data []byte) {
		if werr == nil {
			_, werr = pw.Write(eventstream.Event(data))
		}
	}
	write(first)
	for e := range events {
		write(e.msg)
	}
	write(batchEntry(<-final, id))
	pw.Close()
}
