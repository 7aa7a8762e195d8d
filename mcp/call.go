package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
)

// MaxToolName bounds a tool name (the MCP specification asks for at most
// 128 characters).
const MaxToolName = 128

// Call is a tools/call request: what toolguard derives its key from.
type Call struct {
	// ID is the request id exactly as sent.
	ID   json.RawMessage
	Name string
	// Arguments is params.arguments as sent ({} when absent or null). It
	// leaves out the id, params._meta (progress tokens, trace context) and
	// everything the transport carries (the session id): only the tool and
	// its arguments define the intent.
	Arguments json.RawMessage
	// Continuation is set when params carry inputResponses: the call
	// continues an earlier one that asked for input (a multi round-trip
	// request), under a new id.
	Continuation bool
}

// ParseCall reads the params of a tools/call message. A missing or empty
// params.name, params that are not an object and arguments that are not
// an object wrap ErrInvalidParams.
func ParseCall(m Message) (*Call, error) {
	if m.Method != MethodCallTool {
		return nil, fmt.Errorf("%w: method is %q", ErrInvalidRequest, m.Method)
	}
	if len(m.Params) == 0 {
		return nil, fmt.Errorf("%w: tools/call needs params with a name", ErrInvalidParams)
	}
	ps, err := members(m.Params)
	if err != nil {
		return nil, fmt.Errorf("%w: params: %v", ErrInvalidParams, err)
	}
	c := &Call{ID: m.ID, Arguments: json.RawMessage("{}")}
	if err := json.Unmarshal(ps["name"], &c.Name); err != nil || c.Name == "" {
		return nil, fmt.Errorf("%w: tools/call needs params.name, a non-empty string", ErrInvalidParams)
	}
	if len(c.Name) > MaxToolName || strings.ContainsFunc(c.Name, unicode.IsControl) {
		return nil, fmt.Errorf("%w: params.name must be at most %d bytes without control characters", ErrInvalidParams, MaxToolName)
	}
	if a, ok := ps["arguments"]; ok && string(a) != "null" {
		if bytes.TrimSpace(a)[0] != '{' {
			return nil, fmt.Errorf("%w: params.arguments must be an object", ErrInvalidParams)
		}
		c.Arguments = a
	}
	_, c.Continuation = ps["inputResponses"]
	return c, nil
}
