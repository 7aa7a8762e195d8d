package proxy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/mcp"
)

// mcpSend makes one upstream attempt of a tools/call and reads the
// server's response to it: the JSON body, or the SSE stream up to the
// response with the call's id. The agent going away does not end it (see
// send). A stream that breaks before the response is an error after
// sending: the outcome is unknown.
func (s *Server) mcpSend(c *call) result {
	m := c.mcp
	m.answer, m.outcome = nil, 0
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.in.Context()), s.opts.UpstreamTimeout)
	defer cancel()
	var sent atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(httptrace.GotConnInfo) { sent.Store(true) },
	})
	out, err := http.NewRequestWithContext(ctx, http.MethodPost, m.target.String(), bytes.NewReader(c.body))
	if err != nil {
		return result{err: fmt.Errorf("build upstream request: %w", err)}
	}
	out.Header = outboundHeader(c.in.Header)
	out.ContentLength = int64(len(c.body))
	began := time.Now()
	resp, err := s.upstream.RoundTrip(out)
	s.metrics.upstreamCall(c.route.API.Name, c.metricRoute(), time.Since(began))
	if err != nil {
		return result{err: err, sent: possiblySent(s.upstream, sent.Load(), err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, s.opts.MaxStoredResponse))
		return result{resp: resp, body: body, sent: true}
	}
	raw, err := s.mcpReadStream(ctx, c, resp)
	if err != nil {
		return result{resp: resp, err: fmt.Errorf("read the MCP response: %w", err), sent: true}
	}
	ans, err := mcp.ParseResponse(raw)
	if err != nil {
		return result{resp: resp, err: fmt.Errorf("read the MCP response: %w", err), sent: true}
	}
	m.answer, m.outcome = ans, ans.Classify()
	return result{resp: resp, body: raw, sent: true}
}

// maxResumes bounds the GETs that resume an SSE answer the server closed
// before the response.
const maxResumes = 10

// mcpReadStream reads the server's response to c's call from resp, and
// — where the server closed the SSE stream before it (2025-11-25 polling)
// — from the resumed stream, asked for with a GET carrying Last-Event-ID.
func (s *Server) mcpReadStream(ctx context.Context, c *call, resp *http.Response) ([]byte, error) {
	st := mcp.Stream{Relay: c.mcp.relay}
	raw, err := mcp.ReadResponseFrom(resp.Header.Get("Content-Type"), resp.Body, c.mcp.tool.ID, s.opts.MaxStoredResponse, &st)
	for i := 0; errors.Is(err, mcp.ErrNoResponse) && st.LastEventID != "" && i < maxResumes; i++ {
		t := time.NewTimer(min(st.Retry, 5*time.Second))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		var again *http.Response
		if again, err = s.mcpResumeStream(ctx, c, st.LastEventID); err != nil {
			return nil, err
		}
		raw, err = mcp.ReadResponseFrom(again.Header.Get("Content-Type"), again.Body, c.mcp.tool.ID, s.opts.MaxStoredResponse, &st)
		again.Body.Close()
	}
	return raw, err
}

// mcpResumeStream asks the server for the events of a stream after
// lastID.
func (s *Server) mcpResumeStream(ctx context.Context, c *call, lastID string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.mcp.target.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header = outboundHeader(c.in.Header)
	req.Header.Del("Content-Type")
	req.Header.Del("Content-Length")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", lastID)
	resp, err := s.upstream.RoundTrip(req)
	if err != nil {
		return nil, fmt.Errorf("resume the stream: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("resume the stream: the server answered %s", resp.Status)
	}
	return resp, nil
}

// mcpReadAnswer is what the journal keeps of a tools/call's answer: the
// JSON-RPC response as received, when the tool ran (a result, isError
// included); nothing otherwise.
func (s *Server) mcpReadAnswer(c *call, res result) answerRecord {
	m := c.mcp
	if res.err != nil || m.answer == nil || (m.outcome != mcp.OutcomeResult && m.outcome != mcp.OutcomeToolError) {
		return answerRecord{}
	}
	sum := sha256.Sum256(res.body)
	a := answerRecord{response: &journal.Response{
		Status:   http.StatusOK,
		Header:   http.Header{"Content-Type": {"application/json"}},
		Body:     res.body,
		BodyHash: hex.EncodeToString(sum[:]),
	}}
	if m.outcome == mcp.OutcomeResult {
		a.operationID = c.route.OperationID.Extract(nil, res.body)
	}
	return a
}

// mcpOutcomeChange classifies an attempt of a tools/call (see mcp.Outcome):
// a protocol error or an HTTP 4xx means the tool did not run, so the step
// goes back to prepared and the next retry is sent; a broken stream, a 5xx
// or an internal error leave it started (unknown); a result, isError
// included, commits it.
func (s *Server) mcpOutcomeChange(c *call, st *journal.Step, res result, ans answerRecord) journal.Change {
	next := *st
	m := c.mcp
	switch {
	case res.err != nil && !res.sent:
		next.Status, next.Retryable = journal.StatusFailed, true
		next.LastError = "not executed: " + res.err.Error()
		return journal.Change{Step: next, Event: "failed", Reason: "upstream unreachable; nothing was sent"}
	case res.err != nil:
		next.LastError = res.err.Error()
		return journal.Change{Step: next, Event: "outcome_unknown", Reason: "sent, no answer: " + res.err.Error()}
	case res.resp.StatusCode >= 500:
		next.LastError = "upstream answered " + res.resp.Status
		return journal.Change{Step: next, Event: "outcome_unknown", Reason: "upstream " + strconv.Itoa(res.resp.StatusCode) + " after the request was sent"}
	case m.answer == nil:
		return s.notExecuted(c, next, "upstream answered "+res.resp.Status)
	case m.outcome == mcp.OutcomeNotExecuted:
		if e := m.answer.Error; e != nil {
			return s.notExecuted(c, next, fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message))
		}
		return s.notExecuted(c, next, "the server asked for input before running the tool")
	case m.outcome == mcp.OutcomeUnknown:
		next.LastError = fmt.Sprintf("JSON-RPC error %d: %s", m.answer.Error.Code, m.answer.Error.Message)
		return journal.Change{Step: next, Event: "outcome_unknown", Reason: "the server answered " + next.LastError + ", which does not say whether the tool ran"}
	}
	next.Response = ans.response
	next.LastError = ""
	next.Status, next.Retryable = journal.StatusCommitted, false
	next.OperationID = ans.operationID
	next.Evidence = "the tool returned a result"
	if m.outcome == mcp.OutcomeToolError {
		next.Evidence = "the tool returned a result with isError: true"
	} else if v := c.route.Verify; v != nil {
		next.VerifyBy = time.Now().Add(v.Within) // a tool error has no effect to verify
	}
	return journal.Change{Step: next, Event: "committed", Reason: next.Evidence}
}

// notExecuted puts a step whose tool did not run back to prepared, bound
// to the same arguments where an approval let them through.
func (s *Server) notExecuted(c *call, next journal.Step, why string) journal.Change {
	next.Status, next.Retryable = journal.StatusPrepared, false
	next.Response = nil
	next.LastError = "not executed: " + why
	if c.route.ApprovalRequired {
		next.ApprovedBodyHash = c.intent.BodyHash
	}
	return journal.Change{Step: next, Event: "not_executed", Reason: why + "; the tool did not run"}
}
