package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Outcome classifies a server's answer to a tools/call.
type Outcome uint8

const (
	// OutcomeResult: the tool ran and returned a result.
	OutcomeResult Outcome = iota + 1
	// OutcomeToolError: the tool ran and reported an error (isError:
	// true). It is an outcome like any other: stored and replayed.
	OutcomeToolError
	// OutcomeNotExecuted: a JSON-RPC protocol error (parse error, invalid
	// request, unknown method or tool, invalid params), or a result that
	// asks the client for input first: the tool did not run.
	OutcomeNotExecuted
	// OutcomeUnknown: any other JSON-RPC error (internal errors included):
	// the tool may have run.
	OutcomeUnknown
)

var outcomeNames = [...]string{"", "result", "tool_error", "not_executed", "unknown"}

func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("outcome(%d)", o)
}

// Response is a server's JSON-RPC response to a request.
type Response struct {
	ID     json.RawMessage
	Result json.RawMessage // nil when Error is set
	Error  *Error
}

// Error is a JSON-RPC error object.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// ParseResponse reads a JSON-RPC response message.
func ParseResponse(raw []byte) (*Response, error) {
	ms, err := members(bytes.TrimSpace(raw))
	if err != nil {
		return nil, err
	}
	r := &Response{ID: ms["id"], Result: ms["result"]}
	if e, ok := ms["error"]; ok {
		r.Error = &Error{}
		if err := json.Unmarshal(e, r.Error); err != nil {
			return nil, fmt.Errorf("%w: error object: %v", ErrInvalidRequest, err)
		}
		r.Result = nil
	} else if r.Result == nil {
		return nil, fmt.Errorf("%w: a response needs result or error", ErrInvalidRequest)
	}
	return r, nil
}

// Classify says what a response to a tools/call means for its effect.
func (r *Response) Classify() Outcome {
	if r.Error != nil {
		switch r.Error.Code {
		case CodeParseError, CodeInvalidRequest, CodeMethodNotFound, CodeInvalidParams:
			return OutcomeNotExecuted
		}
		return OutcomeUnknown
	}
	var res struct {
		IsError    bool   `json:"isError"`
		ResultType string `json:"resultType"`
	}
	_ = json.Unmarshal(r.Result, &res) // a result that is not an object is a plain result
	switch {
	case res.ResultType == "input_required":
		return OutcomeNotExecuted
	case res.IsError:
		return OutcomeToolError
	}
	return OutcomeResult
}

// WithID renders the response r under another request's id, byte for
// byte as that request sent it (a number stays a number, a string a
// string). Nothing else of the original exchange is carried over.
func (r *Response) WithID(id json.RawMessage) []byte {
	member, value := `,"result":`, []byte(r.Result)
	if r.Error != nil {
		e, _ := json.Marshal(r.Error) // plain fields cannot fail
		member, value = `,"error":`, e
	}
	const head = `{"jsonrpc":"2.0","id":`
	b := make([]byte, 0, len(head)+len(id)+len(member)+len(value)+2)
	b = append(append(b, head...), id...)
	b = append(append(b, member...), value...)
	return append(b, "}\n"...)
}

// ErrorResponse is a JSON-RPC error response; a nil id is sent as null
// (the request's id could not be read).
func ErrorResponse(id json.RawMessage, code int, msg string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	r := Response{Error: &Error{Code: code, Message: msg}}
	return r.WithID(id)
}

// ResultResponse is a JSON-RPC response carrying result.
func ResultResponse(id json.RawMessage, result any) []byte {
	raw, err := json.Marshal(result)
	if err != nil {
		return ErrorResponse(id, CodeInternalError, "toolguard could not render its answer: "+err.Error())
	}
	r := Response{Result: raw}
	return r.WithID(id)
}
