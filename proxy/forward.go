package proxy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/toolguard/toolguard/egress"
	"github.com/toolguard/toolguard/internal/flight"
	"github.com/toolguard/toolguard/internal/headerfilter"
	"github.com/toolguard/toolguard/internal/wirewatch"
	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/lifecycle"
	"github.com/toolguard/toolguard/problem"
	"github.com/toolguard/toolguard/rules"
	"github.com/toolguard/toolguard/verification"
	"github.com/toolguard/toolguard/verifiers"
)

// result is what came back from one upstream attempt.
type result struct {
	resp *http.Response
	body []byte
	err  error
	// sent is false only when no connection was made, so nothing can have
	// reached the upstream.
	sent bool
	// rest is the unread remainder of a body larger than the store limit
	// (body then holds its first bytes); release closes it and ends the
	// call. Both are nil when the body was read whole.
	rest    io.Reader
	release func()
}

// discard releases a streamed remainder that will not be sent on.
func (r *result) discard() {
	if r.release != nil {
		r.release()
	}
}

// forward sends a claimed step upstream, records the outcome durably and
// only then answers. It returns an error wrapping journal.ErrFenced when
// the step was taken over while the call ran.
func (s *Server) forward(c *call, st journal.Step, fl *flight.Flight, d lifecycle.Decision) (*answer, error) {
	defer s.flights.Finish(st.Key, fl)
	if a, done, err := s.checkBefore(c, st, d); done {
		return a, err
	}
	c.lease = fl.Lease()
	s.trace.Attempt(c.in.Context(), st.Attempt)
	stop := s.heartbeat(st, c.lease)
	res := c.carrier.send(c)
	stop()
	change := c.carrier.outcome(c, res, time.Now())
	rec, err := s.journal.Apply(context.Background(), st.Key, journal.Fenced(st.Epoch, st.Fence, func(cur *journal.Step) (journal.Change, error) {
		return change(*cur), nil
	}))
	if errors.Is(err, journal.ErrCommitUnknown) {
		rec, err = s.reread(st, err)
	}
	if errors.Is(err, journal.ErrFenced) {
		res.discard()
		s.log.Warn("outcome not recorded: the step was taken over (fenced) while its call ran; answering from the journal",
			slog.String(logKey, st.Key), slog.Any("error", err))
		return nil, err
	}
	if err != nil {
		res.discard()
		// The call went out (or may have): the step stays started, and the
		// agent must not be told that nothing was sent.
		s.log.Error("record outcome failed; the step stays started", slog.String(logKey, st.Key), slog.Any("error", err))
		return s.problemWith(c, problem.New(problem.OutcomeUnknown, st.Key, "the call was sent but its outcome could not be recorded; the next retry resolves it"), d), nil
	}
	s.trace.Step(c.in.Context(), &rec)
	return c.carrier.forwarded(c, rec, res, d), nil
}

// outcome records a REST attempt: its answer as readAnswer keeps it.
func (r restCarrier) outcome(c *call, res result, now time.Time) func(journal.Step) journal.Change {
	a := attemptOf(c, res, r.readAnswer(c, res))
	return func(cur journal.Step) journal.Change { return lifecycle.Outcome(cur, a, now) }
}

// forwarded answers a REST call just sent: a refusal where nothing was
// sent, outcome-unknown where the step stays started, else the recorded
// answer (verification started where the rule asks for one).
func (r restCarrier) forwarded(c *call, rec journal.Step, res result, d lifecycle.Decision) *answer {
	s := r.s
	outcome := OutcomeForwarded
	if d.Recovered {
		outcome = OutcomeRecovered
	}
	switch {
	case errors.Is(res.err, egress.ErrRefused):
		s.metrics.Reject("egress")
		return s.problemWith(c, problem.New(problem.Rejected, rec.Key, "nothing was sent: "+res.err.Error()), d)
	case res.err != nil && !res.sent:
		return s.problemWith(c, problem.New(problem.UpstreamUnreachable, rec.Key, "nothing was sent: "+res.err.Error()+"; safe to retry"), d)
	case rec.Status == journal.StatusStarted:
		res.discard()
		p := problem.New(problem.OutcomeUnknown, rec.Key, "the call was sent but its outcome is unknown ("+rec.LastError+"); the next retry resolves it")
		if res.resp != nil {
			// The provider's own pacing; the retry still carries the same key.
			p.RetryAfter = lifecycle.ReadRetrySignals(res.resp.Header, s.now()).After
		}
		return s.problemWith(c, p, d)
	}
	s.afterCommit(c, rec)
	a := s.replay(c, &rec, outcome, d)
	if rec.Response != nil && rec.Response.Truncated {
		// The first answer is the upstream's own, headers included, not
		// the truncation notice later duplicates get.
		a.resp.Header = rec.Response.Header.Clone()
		s.stamp(a.resp.Header, &rec, outcome)
		s.streamWhole(a.resp, &rec, res)
	}
	return a
}

// reread reads a step again after a commit of its outcome was lost: the
// outcome is the stored one if it was written under the caller's claim,
// otherwise it stays unknown (err is returned).
func (s *Server) reread(st journal.Step, err error) (journal.Step, error) {
	got, gerr := s.journal.Get(st.Key)
	if gerr == nil && got.Epoch == st.Epoch && got.Fence == st.Fence && got.Status != journal.StatusStarted {
		return got, nil
	}
	return journal.Step{}, err
}

// heartbeat renews the claim's lease every Lease/3 while the upstream
// call runs, on journals that share leases between replicas (st has a
// LeaseUntil); it returns the function that stops it. A renewal refused
// as fenced means another owner took the step over: the call cannot be
// recalled, and its outcome write will be refused the same way.
func (s *Server) heartbeat(st journal.Step, lease *lifecycle.Lease) (stop func()) {
	return s.renewWhile(st, s.opts.Lease, func(err error) {
		s.log.Warn("lease renewal refused: the step was taken over while its call ran", slog.String(logKey, st.Key), slog.Any("error", err))
	}, lease)
}

// renewWhile renews st's claim for lease every lease/3 until the returned
// stop is called, on journals that share leases (st has a LeaseUntil), or
// for a call whose local lease is sl (every journal: the call must not
// be sent once its claim is gone); otherwise it does nothing. Each renewal
// the journal accepts extends sl from the moment it went out. A renewal
// refused as fenced calls fenced and ends the renewals; other failures
// are logged and retried. The renewals run on a timer's goroutine, so a
// call that ends before its first renewal, as most do, starts none; stop
// waits for a renewal under way.
func (s *Server) renewWhile(st journal.Step, lease time.Duration, fenced func(error), sl *lifecycle.Lease) (stop func()) {
	if st.LeaseUntil.IsZero() && sl == nil {
		return func() {}
	}
	r := &renewal{s: s, st: st, lease: lease, every: max(lease/3, time.Millisecond), fenced: fenced, sl: sl}
	r.mu.Lock()
	r.t = time.AfterFunc(r.every, r.tick)
	r.mu.Unlock()
	return r.stop
}

// renewal is the state of renewWhile's renewals.
type renewal struct {
	s      *Server
	st     journal.Step
	lease  time.Duration
	every  time.Duration
	fenced func(error)
	sl     *lifecycle.Lease

	mu      sync.Mutex
	t       *time.Timer
	stopped bool
	running sync.WaitGroup // a renewal under way
}

// tick renews once and sets the timer for the next renewal, every after
// this one went out.
func (r *renewal) tick() {
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return
	}
	r.running.Add(1)
	r.mu.Unlock()
	defer r.running.Done()
	s, st := r.s, r.st
	ctx, cancel := context.WithTimeout(s.bg, r.lease/3)
	sent := time.Now()
	err := s.journal.Renew(ctx, st.Key, st.Epoch, st.Fence, r.lease)
	cancel()
	if err == nil && r.sl != nil {
		r.sl.Extend(sent, r.lease)
	}
	if errors.Is(err, journal.ErrFenced) {
		r.fenced(err)
		return
	}
	if err != nil && s.bg.Err() == nil {
		s.log.Warn("renew lease", slog.String(logKey, st.Key), slog.Any("error", err))
	}
	r.mu.Lock()
	if !r.stopped {
		r.t.Reset(max(r.every-time.Since(sent), 0))
	}
	r.mu.Unlock()
}

// stop ends the renewals, once any under way has returned.
func (r *renewal) stop() {
	r.mu.Lock()
	r.stopped = true
	r.t.Stop()
	r.mu.Unlock()
	r.running.Wait()
}

// streamWhole gives the first answer of an oversized response the whole
// body as received — the stored copy keeps only its hash — streaming the
// unread remainder, and records the hash once the stream has ended.
func (s *Server) streamWhole(resp *http.Response, rec *journal.Step, res result) {
	resp.Header.Del("Content-Length")
	resp.ContentLength = res.resp.ContentLength
	if n := res.resp.ContentLength; n >= 0 {
		resp.Header.Set("Content-Length", strconv.FormatInt(n, 10))
	}
	h := sha256.New() // hashes what the agent reads: the prefix, then the rest
	var r io.Reader = bytes.NewReader(res.body)
	if res.rest != nil {
		r = io.MultiReader(r, res.rest)
	}
	key, epoch, fence := rec.Key, rec.Epoch, rec.Fence
	resp.Body = &hashingBody{r: r, h: h, release: res.release, done: func(sum string) {
		_, err := s.journal.Apply(context.Background(), key, journal.Fenced(epoch, fence, func(cur *journal.Step) (journal.Change, error) {
			if ch, ok := lifecycle.ResponseHashed(*cur, sum); ok {
				return ch, nil
			}
			return journal.Change{}, journal.ErrNoChange
		}))
		if err != nil && !errors.Is(err, journal.ErrNoChange) {
			s.log.Warn("record the hash of a streamed response", slog.String(logKey, key), slog.Any("error", err))
		}
	}}
}

// hashingBody streams a response body, hashing it, and reports the hash
// when the body was read to its end.
type hashingBody struct {
	r       io.Reader
	h       hash.Hash
	release func()
	done    func(sum string)
	ended   bool
}

func (b *hashingBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.h.Write(p[:n])
	if err == io.EOF && !b.ended {
		b.ended = true
		b.done(hex.EncodeToString(b.h.Sum(nil)))
	}
	return n, err
}

func (b *hashingBody) Close() error {
	if b.release != nil {
		b.release()
		b.release = nil
	}
	return nil
}

// send makes one upstream attempt, only inside the claim's lease (see
// package wirewatch). The agent going away does not cancel it: an abandoned
// call would only turn a known outcome into an unknown one.
func (r restCarrier) send(c *call) result {
	s := r.s
	if res, lapsed := s.leaseLapsed(c); lapsed {
		return res
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.in.Context()), s.opts.UpstreamTimeout)
	ctx, w := wirewatch.Watch(ctx, c.lease)
	out, err := s.outbound(ctx, c)
	if err != nil {
		w.End()
		cancel()
		return result{err: err}
	}
	began := time.Now()
	resp, err := s.sendUpstream(out)
	w.Stop()
	s.metrics.UpstreamCall(c.route.API.Name, c.route.Name, time.Since(began))
	if err != nil {
		w.End()
		cancel()
		return result{err: wirewatch.Cause(ctx, err), sent: w.Sent(err)}
	}
	release := func() { resp.Body.Close(); w.End(); cancel() }
	body, err := io.ReadAll(io.LimitReader(resp.Body, s.opts.MaxStoredResponse+1))
	if err != nil {
		release()
		return result{err: fmt.Errorf("read response: %w", err), sent: true}
	}
	if int64(len(body)) > s.opts.MaxStoredResponse {
		// Too large to store: the outcome is recorded from the status and
		// headers, and the body is streamed on to the agent.
		return result{resp: resp, body: body, sent: true, rest: resp.Body, release: release}
	}
	release()
	return result{resp: resp, body: body, sent: true}
}

// leaseLapsed refuses an attempt whose claim's lease has ended: nothing
// is sent, and the outcome write that follows is fenced if the step was
// taken over meanwhile.
func (s *Server) leaseLapsed(c *call) (result, bool) {
	if c.lease.Holds(time.Now()) {
		return result{}, false
	}
	s.metrics.Reject("lease_lapsed")
	s.log.Warn("not sent: the claim's lease ended before the call was sent", slog.String(logKey, c.intent.Key),
		slog.Time("lease_end", c.lease.Until()))
	return result{err: wirewatch.ErrLeaseLapsed}, true
}

// outbound builds the upstream request: the agent's request minus
// toolguard's and hop-by-hop headers, with the derived key as the
// provider's idempotency key where the rule names one.
func (s *Server) outbound(ctx context.Context, c *call) (*http.Request, error) {
	body := c.body
	h := headerfilter.Outbound(c.in.Header)
	if ni := c.route.NativeIdempotency; ni != nil {
		if ni.Header != "" {
			h.Set(ni.Header, ni.Value(c.intent.Key))
		} else {
			b, err := rules.SetBodyField(c.in.Header.Get("Content-Type"), body, ni.Body, ni.Value(c.intent.Key))
			if err != nil {
				return nil, fmt.Errorf("set idempotency key in body: %w", err)
			}
			body = b
		}
	}
	// Reference injection and conditional headers, on every send.
	body, err := c.route.Apply(h, c.in.Header.Get("Content-Type"), body, c.intent.Key)
	if err != nil {
		return nil, fmt.Errorf("inject the key: %w", err)
	}
	u := *c.in.URL
	out, err := http.NewRequestWithContext(ctx, c.in.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("build upstream request: %w", err)
	}
	out.Header = h
	out.Host = c.in.Host
	if len(body) == 0 {
		out.Body = http.NoBody
	}
	out.ContentLength = int64(len(body))
	wirewatch.NoTransportResend(out, len(body) == 0)
	return out, nil
}

// readAnswer records a definitive answer: the stored response (headers
// filtered, body hashed) and the operation id; the zero lifecycle.Answer
// for one that lifecycle.Outcome does not store (no answer, 5xx, a
// native-idempotency 409). It runs before the journal write, so that
// hashing and parsing a body of up to limits.max_stored_response stay out
// of the journal's serial commit, where the mutation runs.
func (r restCarrier) readAnswer(c *call, res result) lifecycle.Answer {
	s := r.s
	if res.err != nil || res.resp.StatusCode >= 500 {
		return lifecycle.Answer{}
	}
	code := res.resp.StatusCode
	kind := c.route.Outcome.Classify(code, res.body)
	if code == http.StatusConflict && c.route.NativeIdempotency != nil && kind == rules.OutcomeByStatus {
		return lifecycle.Answer{}
	}
	a := lifecycle.Answer{Response: s.storedResponse(res), Kind: kind, Signals: lifecycle.ReadRetrySignals(res.resp.Header, s.now())}
	if lifecycle.Commits(code, kind) {
		a.OperationID = c.route.OperationID.Extract(res.resp.Header, res.body)
	}
	return a
}

// attemptOf captures what lifecycle.Outcome needs to know of an attempt.
func attemptOf(c *call, res result, ans lifecycle.Answer) lifecycle.Attempt {
	a := lifecycle.Attempt{Err: res.err, Sent: res.sent, Native: c.route.NativeIdempotency != nil,
		Answer: ans, VerifyWithin: verifyWithin(c.route)}
	if res.resp != nil {
		a.Status, a.StatusText = res.resp.StatusCode, res.resp.Status
	}
	return a
}

func (s *Server) storedResponse(res result) *journal.Response {
	sum := sha256.Sum256(res.body)
	r := &journal.Response{
		Status:   res.resp.StatusCode,
		Header:   headerfilter.Storable(res.resp.Header),
		BodyHash: hex.EncodeToString(sum[:]),
	}
	if int64(len(res.body)) > s.opts.MaxStoredResponse {
		// The hash is recorded once the body has been streamed whole.
		r.BodyHash = ""
		r.Truncated = true
		s.metrics.TruncatedResponse()
	} else {
		r.Body = res.body
	}
	return r
}

// afterCommit starts the verification of a step just committed, if its
// rule asks for one; a sync verification finishes before the answer.
func (s *Server) afterCommit(c *call, rec journal.Step) {
	v := c.route.Verify
	if v == nil || rec.Status != journal.StatusCommitted || rec.VerifyBy.IsZero() {
		return
	}
	j := verification.Job{Route: c.route, Step: rec, Vals: s.values(c, &rec), Creds: verifiers.CredentialHeaders(c.route.API, c.in.Header),
		Target: c.carrier.verifyTarget()}
	if v.Mode == rules.VerifySync {
		s.verifications.Sync(c.in.Context(), j)
		return
	}
	s.verifications.Start(j)
}
