package proxy

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/lifecycle"
	"github.com/toolguard/toolguard/rules"
	"github.com/toolguard/toolguard/verifiers"
)

// firstProbeDelay is the wait before the first verification probe; the
// wait doubles after every miss, up to Options.VerifyMaxInterval.
const firstProbeDelay = 100 * time.Millisecond

// verification is one pending verification of a committed step.
type verification struct {
	route *rules.Route
	step  journal.Step
	vals  rules.Values
	// creds are the triggering request's credential headers, in memory
	// only; nil after a restart.
	creds http.Header
	// mcpTarget is the MCP endpoint a tool's verification calls; nil for
	// routes.
	mcpTarget *url.URL
}

// startVerify verifies a committed step in the background, without
// delaying the agent's answer. It reports false, starting nothing, when
// this process verifies the step already.
func (s *Server) startVerify(v verification) bool {
	if !s.verifying.add(v.step.Key) {
		return false
	}
	s.bgWork.Add(1)
	go func() {
		defer s.bgWork.Done()
		defer s.verifying.remove(v.step.Key)
		s.ownVerify(s.bg, v)
	}()
	return true
}

// syncVerify verifies a committed step before the agent's answer (mode:
// sync), until ctx ends.
func (s *Server) syncVerify(ctx context.Context, v verification) {
	if !s.verifying.add(v.step.Key) {
		return
	}
	defer s.verifying.remove(v.step.Key)
	s.ownVerify(ctx, v)
}

// ownVerify verifies v under this replica's claim (see verifylease.go),
// renewing its lease while it probes; it does nothing when another
// replica holds the verification.
func (s *Server) ownVerify(ctx context.Context, v verification) {
	if !s.claimVerification(&v) {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := s.verifyHeartbeat(v.step, cancel)
	defer stop()
	s.verify(ctx, v)
}

// verify probes until the effect is visible or the step's VerifyBy passes,
// then records verified or holds the step for review. Its writes are
// fenced: a step that an operator resolved or another replica took over
// meanwhile is left alone. When ctx ends first (shutdown, or the claim was
// fenced) the verification stays pending in the journal, and is resumed
// after the restart or by the replica that holds it.
func (s *Server) verify(ctx context.Context, v verification) {
	if !s.awaitCredential(ctx, &v) {
		return
	}
	delay := firstProbeDelay
	var last verifiers.Result
	for {
		pctx, end := s.trace.Probe(ctx, v.route, v.step.Key)
		if v.route.Verify.Request.Tool != nil {
			last = s.mcpProbe(pctx, v)
		} else {
			last = s.verifier.Probe(pctx, v.route.Verify, v.vals, v.creds)
		}
		end(last)
		s.log.Debug("verification probe", slog.String(logKey, v.step.Key), slog.String("answer", last.Answer.String()))
		if last.Answer == verifiers.Yes {
			s.finishVerify(v, last, true)
			return
		}
		wait := time.Until(v.step.VerifyBy)
		if wait <= 0 {
			s.finishVerify(v, last, false)
			return
		}
		t := time.NewTimer(min(delay, wait))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		delay = min(2*delay, s.opts.VerifyMaxInterval)
	}
}

// awaitCredential parks a verification resumed without its caller's
// credential until the caller's next guarded request lends it, the
// deadline passes (the step is then held, the effect unverified), or ctx
// ends. It reports whether to probe.
func (s *Server) awaitCredential(ctx context.Context, v *verification) bool {
	if v.creds != nil || v.route.API.Credential == "" || v.step.CredentialMAC == "" {
		return true
	}
	ch := s.parked.wait(v.step.CredentialMAC)
	t := time.NewTimer(time.Until(v.step.VerifyBy))
	defer t.Stop()
	select {
	case v.creds = <-ch:
		return true
	case <-t.C:
		s.parked.forget(v.step.CredentialMAC, ch)
		s.finishVerify(*v, verifiers.Result{Evidence: "not probed: no request with the caller's credential arrived after the restart"}, false)
	case <-ctx.Done():
		s.parked.forget(v.step.CredentialMAC, ch)
	}
	return false
}

func (s *Server) finishVerify(v verification, res verifiers.Result, visible bool) {
	within := v.route.Verify.Within
	_, err := s.journal.Apply(context.Background(), v.step.Key, journal.Fenced(v.step.Epoch, v.step.Fence, func(cur *journal.Step) (journal.Change, error) {
		if ch, ok := lifecycle.VerifyFinish(*cur, visible, res.Evidence, within); ok {
			return ch, nil
		}
		return journal.Change{}, journal.ErrNoChange
	}))
	switch {
	case errors.Is(err, journal.ErrFenced):
		s.metrics.Verification("discarded")
		s.log.Warn("verification result discarded: the step was taken over", slog.String(logKey, v.step.Key), slog.Any("error", err))
	case err != nil && !errors.Is(err, journal.ErrNoChange):
		s.log.Error("record verification", slog.String(logKey, v.step.Key), slog.Any("error", err))
	default:
		s.metrics.Verification(map[bool]string{true: "verified", false: "not_visible"}[visible])
		s.log.Info("verification", slog.String(logKey, v.step.Key), slog.Bool("visible", visible), slog.String("evidence", res.Evidence))
	}
}

// ResumeVerifications restarts the verifications that were pending when
// the previous process stopped, and then picks up, every third of the verification lease, those
// whose verifier on another replica stopped renewing its lease (see
// verifylease.go): across replicas, each pending verification is probed
// by one. The original request's credential was never stored: a
// verification of an API with a credential header waits for its caller's
// next guarded request to lend it (see parking). It returns how many it
// resumed.
func (s *Server) ResumeVerifications() (int, error) {
	n, err := s.pickUpVerifications(true)
	if err != nil {
		return 0, err
	}
	s.pickup.Do(s.startVerifyPickup)
	return n, nil
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
