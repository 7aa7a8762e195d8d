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
	"time"

	"github.com/toolguard/toolguard/internal/headerfilter"
	"github.com/toolguard/toolguard/internal/wirewatch"
	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/lifecycle"
	"github.com/toolguard/toolguard/mcp"
)

// mcpSend makes one upstream attempt of a tools/call and reads the
// server's response to it: the JSON body, or the SSE stream up to the
// response with the call's id. The agent going away does not end it (see
// send). A stream that breaks before the response is an error after
// sending: the outcome is unknown.
func (m *mcpCall) send(c *call) result {
	s := m.s
	m.answer, m.raw, m.kind = nil, nil, 0
	if res, lapsed := s.leaseLapsed(c); lapsed {
		return res
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.in.Context()), s.opts.UpstreamTimeout)
	defer cancel()
	ctx, w := wirewatch.Watch(ctx, c.lease)
	defer w.End()
	out, err := http.NewRequestWithContext(ctx, http.MethodPost, m.target.String(), bytes.NewReader(c.body))
	if err != nil {
		return result{err: fmt.Errorf("build upstream request: %w", err)}
	}
	out.Header = headerfilter.Outbound(c.in.Header)
	out.ContentLength = int64(len(c.body))
	wirewatch.NoTransportResend(out, len(c.body) == 0)
	began := time.Now()
	resp, err := s.sendUpstream(out)
	w.Stop()
	s.metrics.UpstreamCall(c.route.API.Name, m.routeLabel(c), time.Since(began))
	if err != nil {
		return result{err: wirewatch.Cause(ctx, err), sent: w.Sent(err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, s.opts.MaxStoredResponse))
		return result{resp: resp, body: body, sent: true}
	}
	raw, err := m.readStream(ctx, c, resp)
	if err != nil {
		return result{resp: resp, err: fmt.Errorf("read the MCP response: %w", err), sent: true}
	}
	ans, err := mcp.ParseResponse(raw)
	if err != nil {
		return result{resp: resp, err: fmt.Errorf("read the MCP response: %w", err), sent: true}
	}
	m.answer, m.raw, m.kind = ans, raw, ans.Classify()
	return result{resp: resp, body: raw, sent: true}
}

// maxResumes bounds the GETs that resume an SSE answer the server closed
// before the response.
const maxResumes = 10

// mcpReadStream reads the server's response to c's call from resp, and
// — where the server closed the SSE stream before it (2025-11-25 polling)
// — from the resumed stream, asked for with a GET carrying Last-Event-ID.
func (m *mcpCall) readStream(ctx context.Context, c *call, resp *http.Response) ([]byte, error) {
	s := m.s
	st := mcp.Stream{Relay: m.relay}
	raw, err := mcp.ReadResponseFrom(resp.Header.Get("Content-Type"), resp.Body, m.tool.ID, s.opts.MaxStoredResponse, &st)
	for i := 0; errors.Is(err, mcp.ErrNoResponse) && st.LastEventID != "" && i < maxResumes; i++ {
		t := time.NewTimer(min(st.Retry, 5*time.Second))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		var again *http.Response
		if again, err = m.resumeStream(ctx, c, st.LastEventID); err != nil {
			return nil, err
		}
		raw, err = mcp.ReadResponseFrom(again.Header.Get("Content-Type"), again.Body, m.tool.ID, s.opts.MaxStoredResponse, &st)
		again.Body.Close()
	}
	return raw, err
}

// mcpResumeStream asks the server for the events of a stream after
// lastID.
func (m *mcpCall) resumeStream(ctx context.Context, c *call, lastID string) (*http.Response, error) {
	s := m.s
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.target.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header = headerfilter.Outbound(c.in.Header)
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

// readAnswer is what the journal keeps of a tools/call's answer: the
// JSON-RPC response as received, when the tool ran (a result, isError
// included); nothing otherwise.
func (m *mcpCall) readAnswer(c *call, res result) lifecycle.Answer {
	if res.err != nil || m.answer == nil || (m.kind != mcp.OutcomeResult && m.kind != mcp.OutcomeToolError) {
		return lifecycle.Answer{}
	}
	sum := sha256.Sum256(res.body)
	a := lifecycle.Answer{Response: &journal.Response{
		Status:   http.StatusOK,
		Header:   http.Header{"Content-Type": {"application/json"}},
		Body:     res.body,
		BodyHash: hex.EncodeToString(sum[:]),
	}}
	if m.kind == mcp.OutcomeResult {
		a.OperationID = c.route.OperationID.Extract(nil, res.body)
	}
	return a
}

// verdictOf captures what lifecycle.MCPOutcome needs to know of a
// tools/call attempt, before the outcome is journaled.
func (m *mcpCall) verdictOf(c *call, res result, ans lifecycle.Answer) lifecycle.MCPVerdict {
	v := lifecycle.MCPVerdict{Attempt: attemptOf(c, res, ans), Outcome: m.kind,
		Rebind: c.route.ApprovalRequired || c.route.ApprovalWhen != nil, BodyHash: c.intent.BodyHash}
	if a := m.answer; a != nil {
		v.Answered = true
		if e := a.Error; e != nil {
			v.RPCError = fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message)
		}
	}
	return v
}

// outcome records a tools/call attempt: the server's response where the
// tool ran, and whether it did (see lifecycle.MCPOutcome).
func (m *mcpCall) outcome(c *call, res result, now time.Time) func(journal.Step) journal.Change {
	v := m.verdictOf(c, res, m.readAnswer(c, res))
	return func(cur journal.Step) journal.Change { return lifecycle.MCPOutcome(cur, v, now) }
}
