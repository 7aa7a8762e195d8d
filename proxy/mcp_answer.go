package proxy

import (
	"bytes"
	"net/http"
	"strings"
	"time"

	"github.com/toolguard/toolguard/internal/headerfilter"
	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/lifecycle"
	"github.com/toolguard/toolguard/mcp"
	"github.com/toolguard/toolguard/problem"
)

// MCP answers: every answer to a guarded tools/call is a JSON-RPC response
// (application/json, HTTP 200) to the agent's request id, never an HTTP
// error, so that MCP clients hand it to the model instead of failing.

// forwarded answers a tools/call just sent: from the record, or with
// the server's own answer when the tool did not run.
func (m *mcpCall) forwarded(c *call, rec journal.Step, res result, d lifecycle.Decision) *answer {
	s := m.s
	outcome := OutcomeForwarded
	if d.Recovered {
		outcome = OutcomeRecovered
	}
	switch {
	case res.err != nil && !res.sent:
		return s.problemWith(c, problem.New(problem.UpstreamUnreachable, rec.Key, "nothing was sent: "+res.err.Error()), d)
	case rec.Status == journal.StatusStarted:
		return s.problemWith(c, problem.New(problem.OutcomeUnknown, rec.Key, "the call was sent but its outcome is unknown ("+rec.LastError+"); the next call with the same arguments resolves it"), d)
	case rec.Status == journal.StatusPrepared && m.answer != nil:
		h := http.Header{"Content-Type": {"application/json"}}
		resp := bodyResponse(c.in, http.StatusOK, h, m.answer.WithID(m.tool.ID))
		resp.Header.Set(HeaderKey, rec.Key)
		resp.Header.Set(HeaderOutcome, outcome)
		return &answer{resp: resp, outcome: outcome, decision: d, attempt: rec.Attempt}
	case rec.Status == journal.StatusPrepared:
		// An HTTP error of the server (an expired session's 404 among
		// them) reaches the client as it was, so that it can react.
		h := headerfilter.Storable(res.resp.Header)
		resp := bodyResponse(c.in, res.resp.StatusCode, h, res.body)
		resp.Header.Set(HeaderKey, rec.Key)
		resp.Header.Set(HeaderOutcome, outcome)
		return &answer{resp: resp, outcome: outcome, decision: d, attempt: rec.Attempt}
	}
	s.afterCommit(c, rec)
	return s.replay(c, &rec, outcome, d)
}

// replay answers a tools/call from a step: the stored response under
// the new request's id, or — where the effect was established by a lookup
// or an operator — a tool result saying so.
func (m *mcpCall) replay(c *call, st *journal.Step, outcome string, d lifecycle.Decision) *answer {
	s := m.s
	var body []byte
	if r := st.Response; r != nil && !r.Truncated {
		if m.answer != nil && bytes.Equal(r.Body, m.raw) {
			body = m.answer.WithID(m.tool.ID) // the answer just received, parsed by send
		} else if ans, err := mcp.ParseResponse(r.Body); err == nil {
			body = ans.WithID(m.tool.ID)
		}
	}
	if body == nil {
		body = mcp.ResultResponse(m.tool.ID, evidenceResult(st))
		outcome = OutcomeRecovered
	}
	h := http.Header{"Content-Type": {"application/json"}}
	resp := bodyResponse(c.in, http.StatusOK, h, body)
	s.stamp(resp.Header, st, outcome)
	return &answer{resp: resp, outcome: outcome, decision: d, attempt: st.Attempt}
}

// evidenceResult tells the model that its call had taken effect before,
// as found by a lookup or stated by an operator; no tool result of it was
// ever received.
func evidenceResult(st *journal.Step) mcp.ToolResult {
	var b strings.Builder
	b.WriteString("This call had already taken effect; toolguard did not run the tool again.")
	if st.OperationID != "" {
		b.WriteString(" Operation id: " + st.OperationID + ".")
	}
	b.WriteString(" The original result was not received, so only this confirmation is available. Step key: " + st.Key + ".")
	meta := map[string]any{"key": st.Key, "status": st.Status.String(), "operation_id": st.OperationID}
	if !strings.HasPrefix(st.Evidence, "operator: ") {
		meta["evidence"] = st.Evidence // an operator's note stays with the operator
	}
	return mcp.ToolResult{
		Content: []mcp.TextContent{{Type: "text", Text: b.String()}},
		Meta:    map[string]any{"toolguard/recovered": meta},
	}
}

// problem renders a problem as a tool result with isError: true.
func (m *mcpCall) problem(c *call, p *problem.Details, d lifecycle.Decision) *answer {
	h := mcp.Hold{Type: p.Type, Title: p.Title, Status: p.Status, Detail: p.Detail, Key: p.Key}
	if p.RetryAfter > 0 {
		h.RetryAfter = int((p.RetryAfter + time.Second - 1) / time.Second)
	}
	hdr := http.Header{"Content-Type": {"application/json"}}
	resp := bodyResponse(c.in, http.StatusOK, hdr, h.Response(m.tool.ID, m.tool.Name))
	if p.Key != "" {
		resp.Header.Set(HeaderKey, p.Key)
	}
	resp.Header.Set(HeaderOutcome, OutcomeBlocked)
	return &answer{resp: resp, outcome: OutcomeBlocked, decision: d}
}
