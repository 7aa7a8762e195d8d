package mcp

import (
	"encoding/json"
	"strings"
)

// MetaProblem is the _meta entry of a hold result; its value is the
// problem toolguard would have answered a REST call with.
const MetaProblem = "toolguard/problem"

// Hold is a refusal or a hold of toolguard, rendered as a tool result.
type Hold struct {
	// Type is the problem type, e.g. urn:toolguard:awaiting-approval.
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	// Detail says what happened.
	Detail string `json:"detail,omitempty"`
	// Key is the step key; "" when the call has none yet.
	Key string `json:"key,omitempty"`
	// RetryAfter is in seconds; zero when the agent should not retry on
	// its own.
	RetryAfter int `json:"retry_after,omitempty"`
}

// ToolResult is the subset of an MCP CallToolResult toolguard writes.
type ToolResult struct {
	Content []TextContent  `json:"content"`
	IsError bool           `json:"isError"`
	Meta    map[string]any `json:"_meta,omitempty"`
}

// TextContent is a text content block.
type TextContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// Result renders h as a tool result with isError: true. Its text is
// written for the model: what happened, what to do (and not to do), and
// the step key an operator acts on.
func (h Hold) Result(tool string) ToolResult {
	return ToolResult{
		Content: []TextContent{{Type: "text", Text: h.text(tool)}},
		IsError: true,
		Meta:    map[string]any{MetaProblem: h},
	}
}

// Response renders h as the JSON-RPC response to request id.
func (h Hold) Response(id json.RawMessage, tool string) []byte {
	return ResultResponse(id, h.Result(tool))
}

func (h Hold) text(tool string) string {
	var b strings.Builder
	b.WriteString("toolguard did not run the tool ")
	b.WriteString(tool)
	b.WriteString(" now: ")
	b.WriteString(h.Title)
	b.WriteString(".")
	if h.Detail != "" {
		b.WriteString(" ")
		b.WriteString(strings.ToUpper(h.Detail[:1]) + h.Detail[1:])
		if !strings.HasSuffix(h.Detail, ".") {
			b.WriteString(".")
		}
	}
	b.WriteString(" What to do: ")
	b.WriteString(advice(h))
	if h.Key != "" {
		b.WriteString(" Step key: ")
		b.WriteString(h.Key)
		b.WriteString(".")
	}
	return b.String()
}

func advice(h Hold) string {
	switch {
	case strings.HasSuffix(h.Type, ":payload-mismatch"):
		return "send exactly the arguments that were approved, or treat this as a different request."
	case strings.HasSuffix(h.Type, ":invalid-body"), strings.HasSuffix(h.Type, ":body-too-large"):
		return "fix the arguments and call again."
	case strings.HasSuffix(h.Type, ":upstream-unreachable"):
		return "nothing was sent; call again with the same arguments."
	case strings.HasSuffix(h.Type, ":outcome-unknown"):
		return "call again with the same arguments (not others): toolguard then finds out what happened, and never runs the tool twice."
	case h.RetryAfter > 0:
		return "wait, then call again with the same arguments; do not change the arguments to get around this."
	}
	return "do not retry and do not call again with other arguments to get around this; an operator must review it. Tell the user the step key."
}
