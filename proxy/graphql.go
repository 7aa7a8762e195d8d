package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/toolguard/toolguard/rules"
)

// selectGraphQL picks the route of a POST to a GraphQL endpoint (see
// rules.SelectGraphQL), reading the body within limits.max_body and
// putting it back for whoever reads it next. It returns the route (nil:
// unmatched, or a query that passes), why a query passes through ("" when
// it does not), or an answer for a body that cannot be read or parsed.
func (s *Server) selectGraphQL(req *http.Request, endpoint *rules.Route) (*rules.Route, string, *http.Response) {
	release, ok := s.reservePeek(req)
	if !ok {
		p := newProblem(ProblemUnavailable, "", "too many request bodies held at once (limits.body_buffer); retry shortly")
		p.RetryAfter = time.Second
		s.metrics.reject("body_buffer")
		return nil, "", s.refuseGraphQL(req, endpoint, p)
	}
	defer release()
	body, err := readBody(req, s.opts.MaxBody)
	if err != nil {
		p := newProblem(ProblemInvalidBody, "", "read request body: "+err.Error())
		if errors.Is(err, errBodyTooLarge) {
			p = newProblem(ProblemBodyTooLarge, "", fmt.Sprintf("request body exceeds limits.max_body (%d bytes)", s.opts.MaxBody))
		}
		return nil, "", s.refuseGraphQL(req, endpoint, p)
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	if len(body) == 0 {
		req.Body = http.NoBody
	}
	route, pass, err := rules.SelectGraphQL(endpoint, body)
	switch {
	case err != nil:
		return nil, "", s.refuseGraphQL(req, endpoint, newProblem(ProblemInvalidBody, "",
			fmt.Sprintf("route %s/%s: %v", endpoint.API.Name, endpoint.Pattern, err)))
	case pass:
		return nil, "GraphQL query that no route selects", nil
	}
	return route, "", nil
}

// reservePeek takes room in limits.body_buffer for reading a GraphQL
// request's body, as a guarded call does (see reserveBody); the guard
// reserves again for the call itself once the route is chosen.
func (s *Server) reservePeek(req *http.Request) (release func(), ok bool) {
	n := req.ContentLength
	if n < 0 {
		n = unknownBodyReserve
	}
	n = min(n, s.opts.MaxBody, s.opts.BodyBuffer)
	if n <= 0 {
		return func() {}, true
	}
	ctx, cancel := context.WithTimeout(req.Context(), s.opts.InFlightWait)
	defer cancel()
	if err := s.bodies.Acquire(ctx, n); err != nil {
		return nil, false
	}
	return func() { s.bodies.Release(n) }, true
}

// refuseGraphQL answers a GraphQL request whose operation cannot be told.
func (s *Server) refuseGraphQL(req *http.Request, endpoint *rules.Route, p *Problem) *http.Response {
	s.metrics.request(endpoint.API.Name, "", OutcomeBlocked)
	s.metrics.reject("invalid_body")
	resp := p.response(req)
	resp.Header.Set(HeaderOutcome, OutcomeBlocked)
	s.logRequest(req, slog.LevelInfo, OutcomeBlocked, resp.StatusCode, p.Detail)
	return resp
}
