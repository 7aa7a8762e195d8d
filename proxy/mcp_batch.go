package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"time"

	"github.com/toolguard/toolguard/internal/headerfilter"
	"github.com/toolguard/toolguard/mcp"
	"github.com/toolguard/toolguard/mcp/servers"
)

// Batches (protocol revision 2025-03-26). A batch of tools/call requests
// is split: each call is guarded on its own, as if it had come in a POST of
// its own, and its answer takes its place in the batch's answer (a JSON
// array, in the batch's order). Calls of tools that are not guarded are
// relayed to the server one by one. The calls run one after the other.
// A batch that mixes tools/call with other messages is refused (see
// readMCP); a batch without tools/call passes through untouched.

// mcpBatch answers a batch of tools/call requests.
func (s *Server) mcpBatch(r *http.Request, ep *servers.Server, target *url.URL, msgs mcp.Body) *http.Response {
	var out bytes.Buffer
	out.WriteByte('[')
	for i, m := range msgs.Messages {
		if i > 0 {
			out.WriteByte(',')
		}
		c := &call{in: r, start: time.Now(), carrier: restCarrier{s}}
		resp, pass := s.mcpCallOne(r, ep, target, c, m, false)
		if pass {
			out.Write(s.mcpRelay(r, target, m))
			continue
		}
		out.Write(batchEntry(resp, m.ID))
	}
	out.WriteString("]\n")
	h := http.Header{"Content-Type": {"application/json"}}
	return bodyResponse(r, http.StatusOK, h, out.Bytes())
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

// mcpRelay sends one message of a batch that toolguard does not guard to
// the server, and returns the server's response to it.
func (s *Server) mcpRelay(r *http.Request, target *url.URL, m mcp.Message) []byte {
	if target == nil {
		target = r.URL
	}
	fail := func(err error) []byte {
		return bytes.TrimSpace(mcp.ErrorResponse(m.ID, mcp.CodeInternalError, "toolguard: relay to the server: "+err.Error()))
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.UpstreamTimeout)
	defer cancel()
	out, err := http.NewRequestWithContext(ctx, http.MethodPost, target.String(), bytes.NewReader(m.Raw))
	if err != nil {
		return fail(err)
	}
	out.Header = headerfilter.Outbound(r.Header)
	out.ContentLength = int64(len(m.Raw))
	resp, err := s.upstream.RoundTrip(out)
	if err != nil {
		return fail(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fail(fmt.Errorf("HTTP %s", resp.Status))
	}
	raw, err := mcp.ReadResponse(resp.Header.Get("Content-Type"), resp.Body, m.ID, s.opts.MaxStoredResponse)
	if err != nil {
		return fail(err)
	}
	return bytes.TrimSpace(raw)
}
