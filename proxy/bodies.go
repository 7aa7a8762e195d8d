package proxy

import (
	"context"
	"time"
)

// Body budget.
//
// A guarded request body is read whole before anything else happens: its
// key is derived from it, and it is sent upstream only once the step is
// journaled. Without a bound, the memory those bodies take grows with the
// number of calls in flight — 256 calls of 64 KiB hold 16 MiB, and the Go
// heap grows to about twice what it holds. So a call reserves room for its
// body from limits.body_buffer before reading it, and gives it back when its
// answer is ready:
//
//   - with a Content-Length, that many bytes (the whole budget for a body
//     longer than it, which is then read alone), waiting for room — the
//     body stays in the kernel's socket buffers meanwhile — for at most
//     limits.in_flight_wait, then 503 with Retry-After;
//   - without one (chunked), unknownBodyReserve bytes the same way; a body
//     that turns out longer takes the rest only if it is free at once, else
//     503, so that a call never waits while holding room.
//
// Waiting is first come, first served, and a call waits only while it holds
// nothing, so reservations cannot deadlock.

// unknownBodyReserve is the room reserved for a body of unannounced length.
const unknownBodyReserve = 64 << 10

// reserveBody takes room for c's body from the budget. It returns the
// answer to send instead when no room was found in time.
func (s *Server) reserveBody(c *call) *answer {
	n := c.in.ContentLength
	switch {
	case n < 0:
		n = min(unknownBodyReserve, s.opts.MaxBody)
	case n > s.opts.MaxBody:
		return nil // refused by readBody before a byte is read
	}
	n = min(n, s.opts.BodyBuffer)
	if n == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(c.in.Context(), s.opts.InFlightWait)
	defer cancel()
	if err := s.bodies.Acquire(ctx, n); err != nil {
		return s.noBodyRoom(c)
	}
	c.reserved = n
	return nil
}

// growBody extends c's reservation to the length of the body it read.
func (s *Server) growBody(c *call, length int64) *answer {
	extra := min(length, s.opts.BodyBuffer) - c.reserved
	if extra <= 0 {
		return nil
	}
	if !s.bodies.TryAcquire(extra) {
		return s.noBodyRoom(c)
	}
	c.reserved += extra
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
	s.metrics.reject("body_buffer")
	p := newProblem(ProblemUnavailable, "", "too many request bodies held at once (limits.body_buffer); retry shortly")
	p.RetryAfter = time.Second
	return s.problem(c, p)
}
