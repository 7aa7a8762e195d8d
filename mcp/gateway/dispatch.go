package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/toolguard/toolguard/internal/eventstream"
	"github.com/toolguard/toolguard/mcp"
	"github.com/toolguard/toolguard/mcp/servers"
	"github.com/toolguard/toolguard/metrics"
)

// readMessages reads and parses r's body within the body budget, and puts
// it back for a passthrough; a refusal is the answer to send instead.
func (g *Gateway) readMessages(r *http.Request) (mcp.Body, func(), *http.Response) {
	body, release, refused := g.cfg.Pipeline.ReadBody(r)
	if refused != nil {
		if refused.StatusCode == http.StatusRequestEntityTooLarge {
			refused.Body.Close()
			return mcp.Body{}, nil, rpcError(r, http.StatusRequestEntityTooLarge, nil, mcp.CodeInvalidRequest,
				"toolguard: the message exceeds limits.max_body; nothing was sent")
		}
		return mcp.Body{}, nil, refused // too slow (408), no room (503): nothing was sent
	}
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	msgs, err := mcp.Parse(body)
	if err != nil {
		release()
		g.cfg.Metrics.Reject("invalid_body")
		return mcp.Body{}, nil, rpcError(r, http.StatusBadRequest, nil, mcp.Code(err), "toolguard: "+err.Error())
	}
	return msgs, release, nil
}

// dispatch is one POST to an MCP endpoint being answered.
type dispatch struct {
	g *Gateway
	r *http.Request
	// w, when set, is the agent's writer (Serve): a streamed answer is
	// written to it as it comes, and wrote is then set.
	w      http.ResponseWriter
	wrote  bool
	ep     *servers.Server
	target *url.URL
	start  time.Time
	// release gives the body's room back; owned is set when a streamed
	// answer has taken it over.
	release func()
	owned   bool
}

// run guards the tools/call of msgs, refuses a batch that mixes them with
// other messages, and lets everything else pass.
func (d *dispatch) run(msgs mcp.Body) (*http.Response, json.RawMessage) {
	g, r := d.g, d.r
	switch n := msgs.Calls(); {
	case n == 0:
		if d.ep.CancelsGuardedCall(r, msgs) {
			g.cfg.Log.Info("notifications/cancelled held back: the guarded call runs to its outcome", slog.String("api", d.ep.API.Name))
			if g.cfg.CancelHeld != nil {
				g.cfg.CancelHeld()
			}
			return response(r, http.StatusAccepted, http.Header{}, nil), nil
		}
		if m := msgs.Messages[0]; !msgs.Batch && m.Method == "tools/list" {
			return nil, m.ID
		}
		return nil, nil
	case msgs.Batch && n < len(msgs.Messages):
		g.cfg.Metrics.Reject("invalid_body")
		return rpcError(r, http.StatusBadRequest, nil, mcp.CodeInvalidRequest,
			"toolguard: a batch that mixes tools/call with other messages is not accepted; send the tools/call requests in a batch of their own, or one per POST"), nil
	case msgs.Batch:
		return d.batch(msgs), nil
	}
	resp, pass := d.callOne(msgs.Messages[0], true)
	if pass {
		return nil, nil
	}
	return resp, nil
}

// callOne guards one tools/call message m. pass reports a tool that is
// not guarded. With stream, an agent that accepts an event stream gets the
// server's messages before the response relayed as they come (see
// stream.go).
func (d *dispatch) callOne(m mcp.Message, stream bool) (resp *http.Response, pass bool) {
	g, r := d.g, d.r
	tc, err := mcp.ParseCall(m)
	if err != nil {
		g.cfg.Metrics.Reject("invalid_body")
		return rpcError(r, http.StatusOK, m.ID, mcp.Code(err), "toolguard: "+err.Error()), false
	}
	route, guarded := g.Route(d.ep, tc.Name)
	if !guarded {
		return nil, true
	}
	in := *r
	in.URL = d.target
	t := Tool{In: &in, Server: d.ep, Target: d.target, Route: route, Message: m, Call: tc, Start: d.start}
	end := d.ep.Begin(r, tc.ID)
	if stream && d.w != nil && eventstream.Accepted(r.Header) {
		defer end()
		resp, d.wrote = g.streamTo(d.w, t)
		return resp, false
	}
	if stream && eventstream.Accepted(r.Header) {
		d.owned = true
		return g.streaming(t, func() { end(); d.release() }), false
	}
	defer end()
	return g.cfg.Pipeline.Guard(t, nil), false
}

// rpcError answers with a JSON-RPC error; nothing was sent or journaled.
func rpcError(r *http.Request, status int, id json.RawMessage, code int, msg string) *http.Response {
	h := http.Header{"Content-Type": {"application/json"}}
	h.Set(headerOutcome, metrics.OutcomeBlocked)
	return response(r, status, h, mcp.ErrorResponse(id, code, msg))
}

// response is an answer held in memory.
func response(req *http.Request, status int, h http.Header, body []byte) *http.Response {
	h.Set("Content-Length", strconv.Itoa(len(body)))
	return &http.Response{
		Status: strconv.Itoa(status) + " " + http.StatusText(status), StatusCode: status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: req,
	}
}
