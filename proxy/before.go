package proxy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"net/http"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/lifecycle"
	"github.com/toolguard/toolguard/verifiers"
)

// checkBefore runs a route's verify.before ahead of a step's first send.
// When its answer says there is nothing to act on (the thing to delete is
// already gone), the step is committed as already done from that answer,
// nothing is sent, and done is true; a or err then answer the call. An
// unknown answer lets the call go: the verification after it decides.
func (s *Server) checkBefore(c *call, st journal.Step, d lifecycle.Decision) (a *answer, done bool, err error) {
	v := c.route.Verify
	if v == nil || v.Before == nil || d.Recovered || st.Attempt != 1 {
		return nil, false, nil
	}
	res := s.verifier.Check(context.WithoutCancel(c.in.Context()), v.Before, s.values(c, &st), verifiers.CredentialHeaders(c.route.API, c.in.Header))
	s.log.Info("verify before", slog.String(logKey, st.Key), slog.String(logRoute, c.route.Name), slog.String("answer", res.Answer.String()), slog.String("evidence", res.Evidence))
	if res.Answer != verifiers.No {
		return nil, false, nil
	}
	rec, err := s.journal.Apply(context.Background(), st.Key, journal.Fenced(st.Epoch, st.Fence, func(cur *journal.Step) (journal.Change, error) {
		next := *cur
		next.Status, next.Retryable, next.LastError = journal.StatusCommitted, false, ""
		next.Attempt-- // claimed, but never sent
		next.Evidence = "already done: verify.before " + res.Evidence + "; not sent"
		next.Response = checkResponse(res)
		return journal.Change{Step: next, Event: "committed", Reason: next.Evidence}, nil
	}))
	if err != nil {
		return nil, true, err
	}
	return s.replay(c, &rec, OutcomeRecovered, d), true, nil
}

// checkResponse stores a verify.before answer as the step's response: the
// provider's own "not found" is what a send would have answered.
func checkResponse(res verifiers.Result) *journal.Response {
	sum := sha256.Sum256(res.Body)
	return &journal.Response{
		Status:   res.Status,
		Header:   http.Header{"Content-Type": {"application/json"}},
		Body:     res.Body,
		BodyHash: hex.EncodeToString(sum[:]),
	}
}
