package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"

	"github.com/toolguard/toolguard/rules"
)

// selectGraphQL picks the route of a POST to a GraphQL endpoint (see
// rules.SelectGraphQL), reading the body within limits.max_body and
// putting it back for whoever reads it next. It returns the route (nil:
// unmatched, or a query that passes), why a query passes through ("" when
// it does not), or an answer for a body that cannot be read or parsed.
func (s *Server) selectGraphQL(req *http.Request, endpoint *rules.Route) (*rules.Route, string, *http.Response) {
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

// refuseGraphQL answers a GraphQL request whose operation cannot be told.
func (s *Server) refuseGraphQL(req *http.Request, endpoint *rules.Route, p *Problem) *http.Response {
	s.metrics.request(endpoint.API.Name, "", OutcomeBlocked)
	s.metrics.reject("invalid_body")
	resp := p.response(req)
	resp.Header.Set(HeaderOutcome, OutcomeBlocked)
	s.logRequest(req, slog.LevelInfo, OutcomeBlocked, resp.StatusCode, p.Detail)
	return resp
}
