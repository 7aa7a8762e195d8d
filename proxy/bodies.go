package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/toolguard/toolguard/internal/bodyread"
	"github.com/toolguard/toolguard/problem"
)

// Body budget and body deadlines.
//
// A guarded request body is read whole before anything else happens: its
// key is derived from it, and it is sent upstream only once the step is
// journaled. Without a bound, the memory those bodies take grows with the
// number of calls in flight — 256 calls of 64 KiB hold 16 MiB, and the Go
// heap grows to about twice what it holds. So bodies take room from
// limits.body_buffer as their bytes arrive, a chunk at a time, and give it
// back when their answer is ready. A call holds the bytes it has received
// plus at most one chunk it is reading into, never what it merely
// announced: a client that announces 5 MiB and sends one byte a second
// holds one chunk, and everyone else keeps going.
//
//   - The first chunk is up to firstChunk bytes of an announced length
//     (bodyChunk of an unannounced one), so that most bodies take their
//     room in one step. It may wait for room — the body stays in the
//     kernel's socket buffers meanwhile — for at most
//     limits.in_flight_wait, then 503 with Retry-After. Waiting is first
//     come, first served.
//   - Later chunks, bodyChunk each, take room only if it is free at once,
//     else 503: a call never waits while holding room, so reservations
//     cannot deadlock.
//   - A body longer than body_buffer takes the whole budget and is then
//     read alone.
//
// A slow body cannot hold its room for long either: each read must bring
// bytes within limits.body_read_timeout, and once that allowance is used
// up the body must keep arriving at limits.body_min_rate on average (each
// body_min_rate bytes received extend the deadline by one second, as
// Apache's mod_reqtimeout does). A client that falls behind gets 408
// request-timeout, its connection is closed, and nothing is journaled.
// The deadlines are read deadlines on the client's connection, for plain
// requests and for requests inside an intercepted tunnel alike.

// Chunks of room a body takes: the first of an announced length, then
// each next one.
const (
	firstChunk = 128 << 10
	bodyChunk  = 64 << 10
)

// readBody reads c's body into c.body, taking room from the budget as it
// goes. It returns the answer to send instead when the body is refused.
func (s *Server) readBody(c *call) *answer {
	req := c.in
	if req.Body == nil || req.Body == http.NoBody {
		return nil
	}
	defer req.Body.Close()
	clock := s.bodyClock(req)
	whole := false
	defer func() { clock.Stop(whole) }()
	if req.ContentLength > s.opts.MaxBody {
		return s.bodyTooLarge(c)
	}
	// The body is read into chunks, joined once at the end: growing one
	// slice copies it again and again, and the copies left behind made the
	// heap peak at several times a large body (or a refused one) before
	// the GC caught up.
	var b []byte        // the chunk being filled
	var filled [][]byte // the chunks before it
	var got int64       // bytes received
	if n := req.ContentLength; n > 0 {
		b = make([]byte, 0, min(n, firstChunk)) // one exact allocation for most bodies
	}
	for {
		if got >= c.reserved && c.reserved < s.opts.BodyBuffer {
			if a := s.takeRoom(c, got); a != nil {
				return a
			}
		}
		room := c.reserved - got
		if c.reserved >= s.opts.BodyBuffer {
			room = bodyChunk // read alone: the whole budget is held
		}
		if n := req.ContentLength; n > 0 {
			room = min(room, n-got)
		}
		room = min(room, s.opts.MaxBody+1-got)
		if int64(cap(b)-len(b)) < room {
			if len(b) > 0 {
				filled = append(filled, b)
			}
			b = make([]byte, 0, max(room, bodyChunk))
		}
		n, err := clock.Read(req.Body, b[len(b):len(b)+int(room)])
		b = b[:len(b)+n]
		got += int64(n)
		switch {
		case got > s.opts.MaxBody:
			return s.bodyTooLarge(c)
		case errors.Is(err, io.EOF), err == nil && req.ContentLength > 0 && got == req.ContentLength:
			c.body, whole = bodyread.Join(filled, b, got), true
			return nil
		case errors.Is(err, bodyread.ErrTimeout):
			s.metrics.Reject("body_timeout")
			return s.problem(c, problem.New(problem.RequestTimeout, "", fmt.Sprintf(
				"the request body arrived too slowly (%d bytes received; limits.body_read_timeout is %s, limits.body_min_rate %d bytes/s); nothing was journaled or sent",
				got, s.opts.BodyReadTimeout, max(s.opts.BodyMinRate, 0))))
		case err != nil:
			s.metrics.Reject("invalid_body")
			return s.problem(c, problem.New(problem.InvalidBody, "", "read request body: "+err.Error()))
		}
	}
}

// takeRoom extends c's reservation by the next chunk of a body of which
// have bytes are read; the first chunk may wait for room, later ones not.
func (s *Server) takeRoom(c *call, have int64) *answer {
	want := min(int64(bodyChunk), s.opts.BodyBuffer-c.reserved)
	if n := c.in.ContentLength; n > 0 {
		if c.reserved == 0 {
			want = min(firstChunk, s.opts.BodyBuffer)
		}
		want = min(want, n-have)
	}
	if want <= 0 {
		return nil
	}
	if c.reserved > 0 {
		if !s.bodies.TryAcquire(want) {
			return s.noBodyRoom(c)
		}
		c.reserved += want
		return nil
	}
	if !s.bodies.TryAcquire(want) { // room now, and nobody queued before us: no timer
		ctx, cancel := context.WithTimeout(c.in.Context(), s.opts.InFlightWait)
		defer cancel()
		if err := s.bodies.Acquire(ctx, want); err != nil {
			return s.noBodyRoom(c)
		}
	}
	c.reserved = want
	return nil
}

// releaseBody gives c's reservation back.
func (s *Server) releaseBody(c *call) {
	if c.reserved > 0 {
		s.bodies.Release(c.reserved)
		c.reserved = 0
	}
}

func (s *Server) noBodyRoom(c *call) *answer {
	s.metrics.Reject("body_buffer")
	p := problem.New(problem.Unavailable, "", "too many request bodies held at once (limits.body_buffer); retry shortly")
	p.RetryAfter = time.Second
	return s.problem(c, p)
}

func (s *Server) bodyTooLarge(c *call) *answer {
	s.metrics.Reject("body_too_large")
	return s.problem(c, problem.New(problem.BodyTooLarge, "", fmt.Sprintf("request body exceeds limits.max_body (%d bytes)", s.opts.MaxBody)))
}

// bodyClock holds a body read to limits.body_read_timeout and
// limits.body_min_rate through read deadlines on the client connection.
func (s *Server) bodyClock(req *http.Request) *bodyread.Clock {
	k := &bodyread.Clock{Timeout: s.opts.BodyReadTimeout, MinRate: s.opts.BodyMinRate, Start: time.Now()}
	if rc := connOf(req.Context()); rc != nil { // no connection: no deadlines
		k.Conn = rc
	}
	return k
}
