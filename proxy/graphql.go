package proxy

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/toolguard/toolguard/observe"
	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/problem"
	"github.com/toolguard/toolguard/rules"
)

// selectGraphQL picks the route of a POST to a GraphQL endpoint (see
// rules.SelectGraphQL), reading the body within limits.max_body and
// putting it back for whoever reads it next. It returns the route (nil:
// unmatched, or a query that passes), why a query passes through ("" when
// it does not), or an answer for a body that cannot be read or parsed —
// except in observe mode, where such a body stays on the endpoint's route
// and is observed there.
func (s *Server) selectGraphQL(req *http.Request, endpoint *rules.Route) (*rules.Route, string, *http.Response) {
	// The body is read as a guarded call's is (room in limits.body_buffer
	// as bytes arrive, the body deadlines); the room is given back once the
	// route is chosen, and the guard takes it again for the call itself.
	c := &call{in: req, start: time.Now(), carrier: restCarrier{s}}
	defer s.releaseBody(c)
	observeMode := s.modeOf(endpoint.API) == policy.ModeObserve
	if observeMode {
		// Nothing is refused: a body that cannot be read whole stays on
		// the endpoint's route, whose observation says it would have been.
		if s.peekBody(c) != observe.PeekWhole {
			return endpoint, "", nil
		}
	} else if a := s.readBody(c); a != nil {
		return nil, "", s.refuseGraphQL(req, endpoint, a.resp, a.decision.Why)
	}
	body := c.body
	if !observeMode {
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
		if len(body) == 0 {
			req.Body = http.NoBody
		}
	}
	route, pass, err := rules.SelectGraphQL(endpoint, body)
	switch {
	case err != nil && observeMode:
		return endpoint, "", nil
	case err != nil:
		p := problem.New(problem.InvalidBody, "", fmt.Sprintf("route %s/%s: %v", endpoint.API.Name, endpoint.Pattern, err))
		s.metrics.Reject("invalid_body")
		return nil, "", s.refuseGraphQL(req, endpoint, problemResponse(req, rules.ErrorFormat{}, p), p.Detail)
	case pass:
		return nil, "GraphQL query that no route selects", nil
	}
	return route, "", nil
}

// refuseGraphQL answers a GraphQL request whose body cannot be read or
// whose operation cannot be told.
func (s *Server) refuseGraphQL(req *http.Request, endpoint *rules.Route, resp *http.Response, why string) *http.Response {
	s.metrics.Request(endpoint.API.Name, "", OutcomeBlocked)
	resp.Header.Set(HeaderOutcome, OutcomeBlocked)
	s.logRequest(req, slog.LevelInfo, OutcomeBlocked, resp.StatusCode, why)
	return resp
}
