package mcp

import "errors"

// JSON-RPC error codes (JSON-RPC 2.0, section 5.1).
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
)

// Errors of Parse, each answered with the JSON-RPC error code Code gives.
var (
	// ErrParse: the body is not JSON, or has duplicate keys.
	ErrParse = errors.New("malformed JSON-RPC message")
	// ErrInvalidRequest: JSON, but not a JSON-RPC 2.0 message.
	ErrInvalidRequest = errors.New("invalid JSON-RPC request")
	// ErrInvalidParams: a tools/call whose params cannot be read.
	ErrInvalidParams = errors.New("invalid tools/call params")
)

// Code is the JSON-RPC error code for an error of Parse.
func Code(err error) int {
	switch {
	case errors.Is(err, ErrParse):
		return CodeParseError
	case errors.Is(err, ErrInvalidParams):
		return CodeInvalidParams
	}
	return CodeInvalidRequest
}
