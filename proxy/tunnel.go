package proxy

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"

	"github.com/elazarl/goproxy"

	"github.com/toolguard/toolguard/problem"
	"github.com/toolguard/toolguard/rules"
)

// Outcomes of a CONNECT in its decision line; not Toolguard-Outcome values
// (a tunnel has no answer to carry the header).
const (
	outcomeTunnel      = "tunnel"      // passed through, bytes copied untouched
	outcomeIntercepted = "intercepted" // TLS terminated; each request inside is decided
)

// tunnelDialError marks an error of the tunnel dialer, so that tunnelFailed
// can tell it from the copy errors of an open tunnel, which goproxy hands to
// the same handler.
type tunnelDialError struct{ err error }

func (e *tunnelDialError) Error() string { return e.err.Error() }
func (e *tunnelDialError) Unwrap() error { return e.err }

// tunnelOpened writes the decision line of a tunnel whose dial succeeded.
func (s *Server) tunnelOpened(req *http.Request) {
	s.logRequest(req, slog.LevelDebug, outcomeTunnel, http.StatusOK, "not intercepted: passed through untouched")
}

// tunnelFailed is goproxy's ConnectionErrHandler. A tunnel whose dial was
// refused by the egress checks is answered 403 rejected, one that could not
// be dialled 502 upstream-unreachable, each with its decision line; errors
// of a tunnel already open are left alone (the tunnel is closed).
func (s *Server) tunnelFailed(w io.Writer, ctx *goproxy.ProxyCtx, err error) {
	var de *tunnelDialError
	if !errors.As(err, &de) {
		return
	}
	var resp *http.Response
	if r := refusedByEgress(err); r != nil {
		resp = s.refuse(ctx.Req, egressRefusal(r))
	} else {
		p := problem.New(problem.UpstreamUnreachable, "", "cannot open a tunnel to "+ctx.Req.Host+": "+de.err.Error())
		s.logRequest(ctx.Req, slog.LevelInfo, OutcomePassthrough, p.Status, p.Detail)
		resp = problemResponse(ctx.Req, rules.ErrorFormat{}, p)
		resp.Header.Set(HeaderOutcome, OutcomePassthrough)
	}
	resp.Close = true
	resp.Write(w)
}

// connKey is the context key of a request's connection controls.
type connKey struct{}

// withConn stores the controls of the client connection a request arrived
// on, so that reading a guarded body can set read deadlines on it.
func withConn(ctx context.Context, rc *http.ResponseController) context.Context {
	return context.WithValue(ctx, connKey{}, rc)
}

// connOf returns the connection controls withConn stored, or nil.
func connOf(ctx context.Context) *http.ResponseController {
	rc, _ := ctx.Value(connKey{}).(*http.ResponseController)
	return rc
}
