package proxy

import (
	"net/http"
	"time"

	"github.com/elazarl/goproxy"

	"github.com/toolguard/toolguard/internal/wirewatch"
	"github.com/toolguard/toolguard/observe"
)

// The way an observed call travels: its request body read for the key and
// put back byte for byte (observe.Peek), within the body budget; its answer
// streamed to the agent as it comes, teed for the observation
// (Observation.Tee).

// peekBody reads c's request body into c.body so that the key can be
// derived, and puts back a body that gives the upstream exactly the bytes
// the agent sent (observe.Peek). It reads at most limits.max_body, taking
// room from limits.body_buffer as readBody does (a body longer than the
// budget is read alone) but never waiting for it: an observed call is
// never refused, nor held back.
func (s *Server) peekBody(c *call) observe.Peeked {
	body, got := observe.Peek(c.in, s.opts.MaxBody, func(have int64) int64 {
		if have >= c.reserved && c.reserved < s.opts.BodyBuffer && !s.tryRoom(c) {
			return 0
		}
		if c.reserved >= s.opts.BodyBuffer {
			return bodyChunk // read alone: the whole budget is held
		}
		return c.reserved - have
	})
	c.body = body
	return got
}

// tryRoom takes the next chunk of room in the body budget for c, if it is
// free at once.
func (s *Server) tryRoom(c *call) bool {
	want := min(int64(bodyChunk), s.opts.BodyBuffer-c.reserved)
	if n := c.in.ContentLength; n > 0 && c.reserved == 0 {
		want = min(n, firstChunk, s.opts.BodyBuffer)
	}
	if want <= 0 || !s.bodies.TryAcquire(want) {
		return false
	}
	c.reserved += want
	return true
}

// send makes the observed call's one attempt, as a passed-through call's
// is made, and tees its answer so that the observation is journaled once
// the answer has been streamed. A refused dial journals nothing: it gets
// its own decision line (refuseDial).
func (o *observation) send(req *http.Request) (*http.Response, error) {
	s, c := o.s, o.c
	began := time.Now()
	resp, err := s.sendUpstream(req)
	s.metrics.UpstreamCall(c.route.API.Name, c.carrier.routeLabel(c), time.Since(began))
	switch {
	case refusedByEgress(err) != nil:
		o.Dropped()
		return nil, err
	case err != nil:
		o.Ended(observe.Attempt{Err: err, Sent: !wirewatch.IsDialError(err)}, "")
		return nil, err
	case resp.StatusCode == http.StatusSwitchingProtocols:
		o.Ended(observe.Attempt{Resp: resp, Sent: true}, "") // the body is the connection
		return resp, nil
	}
	o.Tee(resp, s.opts.MaxStoredResponse)
	return resp, nil
}

// observingTripper carries an observed call through goproxy: as
// passthroughTripper does, with the observation.
type observingTripper struct{ o *observation }

func (t observingTripper) RoundTrip(req *http.Request, ctx *goproxy.ProxyCtx) (*http.Response, error) {
	resp, err := t.o.send(req)
	return t.o.s.passedThrough(req, ctx, resp, err), nil
}
