package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/toolguard/toolguard/internal/headerfilter"
	"github.com/toolguard/toolguard/mcp"
)

// Batches (protocol revision 2025-03-26). A batch of tools/call requests
// is split: each call is guarded on its own, as if it had come in a POST of
// its own, and its answer takes its place in the batch's answer (a JSON
// array, in the batch's order). Calls of tools that are not guarded are
// relayed to the server one by one. The calls run one after the other.
// A batch that mixes tools/call with other messages is refused (see
// dispatch.run); a batch without tools/call passes through untouched.

// batch answers a batch of tools/call requests.
func (d *dispatch) batch(msgs mcp.Body) *http.Response {
	var out bytes.Buffer
	out.WriteByte('[')
	for i, m := range msgs.Messages {
		if i > 0 {
			out.WriteByte(',')
		}
		resp, pass := d.callOne(m, false)
		if pass {
			out.Write(d.relay(m))
			continue
		}
		out.Write(batchEntry(resp, m.ID))
	}
	out.WriteString("]\n")
	h := http.Header{"Content-Type": {"application/json"}}
	return response(d.r, http.StatusOK, h, out.Bytes())
}

// batchEntry is the JSON-RPC response an answer to one call of a batch
// holds; an HTTP error (the tool did not run) becomes a JSON-RPC error.
func batchEntry(resp *http.Response, id json.RawMessage) []byte {
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode == http.StatusOK && mt == "application/json" {
		return bytes.TrimSpace(body)
	}
	return bytes.TrimSpace(mcp.ErrorResponse(id, mcp.CodeInternalError,
		fmt.Sprintf("toolguard: the server answered HTTP %s; the tool did not run", resp.Status)))
}

// relay sends one message of a batch that toolguard does not guard to
// the server, and returns the server's response to it.
func (d *dispatch) relay(m mcp.Message) []byte {
	g, r := d.g, d.r
	fail := func(err error) []byte {
		return bytes.TrimSpace(mcp.ErrorResponse(m.ID, mcp.CodeInternalError, "toolguard: relay to the server: "+err.Error()))
	}
	ctx, cancel := context.WithTimeout(r.Context(), g.cfg.UpstreamTimeout)
	defer cancel()
	out, err := http.NewRequestWithContext(ctx, http.MethodPost, d.target.String(), bytes.NewReader(m.Raw))
	if err != nil {
		return fail(err)
	}
	out.Header = headerfilter.Outbound(r.Header)
	out.ContentLength = int64(len(m.Raw))
	resp, err := g.cfg.Upstream.RoundTrip(out)
	if err != nil {
		return fail(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fail(fmt.Errorf("HTTP %s", resp.Status))
	}
	raw, err := mcp.ReadResponse(resp.Header.Get("Content-Type"), resp.Body, m.ID, g.cfg.MaxResponse)
	if err != nil {
		return fail(err)
	}
	return bytes.TrimSpace(raw)
}
