package proxy

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/rules"
	"github.com/toolguard/toolguard/verification"
	"github.com/toolguard/toolguard/verifiers"
)

// newVerifier builds the verifier of committed effects (package
// verification): its probes go out through the proxy's transport, or as
// tool calls to MCP servers, and its claims are renewed like a call's.
func (s *Server) newVerifier() *verification.Verifier {
	return verification.New(verification.Config{
		Journal: s.journal,
		Probe:   s.probe,
		Route:   s.routeOf,
		ToolTarget: func(api string) *url.URL {
			if ep := s.mcp.Named(api); ep != nil {
				return ep.URL
			}
			return nil
		},
		Renew: func(st journal.Step, lease time.Duration, fenced func(error)) func() {
			return s.renewWhile(st, lease, fenced, nil)
		},
		Lease:       s.verifyLease(),
		MaxInterval: s.opts.VerifyMaxInterval,
		Credentials: &s.parked,
		Metrics:     s.metrics,
		Log:         s.log,
	})
}

// probe makes one verification probe, traced: an HTTP request for a
// route, a tool call for an MCP tool.
func (s *Server) probe(ctx context.Context, j verification.Job) verifiers.Result {
	pctx, end := s.trace.Probe(ctx, j.Route, j.Step.Key)
	var res verifiers.Result
	if j.Route.Verify.Request.Tool != nil {
		res = s.tools.Probe(pctx, j.Target, j.Creds, j.Route, j.Vals)
	} else {
		res = s.verifier.Probe(pctx, j.Route.Verify, j.Vals, j.Creds)
	}
	end(res)
	return res
}

// verifyLease is how long a verification claim lasts without a renewal:
// Options.VerifyLease (recovery.verify_lease), or else the call lease
// (Options.Lease), shortened to the upstream timeout (at least 1s) when
// that is shorter. A verifier renews it every third of that, so a replica
// that stopped is taken over within about one upstream timeout, while a
// probe (itself bounded by the upstream timeout) never outlives it
// unnoticed.
func (s *Server) verifyLease() time.Duration {
	if s.opts.VerifyLease > 0 {
		return s.opts.VerifyLease
	}
	return min(s.opts.Lease, max(s.opts.UpstreamTimeout, time.Second))
}

// ResumeVerifications restarts the verifications that were pending when
// the previous process stopped, and then picks up those whose verifier on
// another replica stopped renewing its lease (see package verification).
// It returns how many it resumed.
func (s *Server) ResumeVerifications() (int, error) {
	return s.verifications.Resume()
}

// routeOf finds a loaded route by API and route name.
func (s *Server) routeOf(api, name string) *rules.Route {
	if ep := s.mcp.Named(api); ep != nil {
		return ep.API.Tool(name)
	}
	for _, a := range s.rules.APIs {
		if a.Name == api && a.MCP != nil {
			return a.Tool(name)
		}
		if a.Name != api {
			continue
		}
		for _, r := range a.Routes {
			if r.Name == name {
				return r
			}
		}
		if name == rules.UnlistedRoute {
			// One route per method, alike but for the method, which
			// recovery does not read.
			return a.UnlistedRouteOf(http.MethodPost)
		}
	}
	return nil
}
