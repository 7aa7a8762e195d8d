package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// MethodCallTool is the method toolguard guards.
const MethodCallTool = "tools/call"

// Message is one JSON-RPC message of a POST body.
type Message struct {
	// ID is the request id exactly as sent (a JSON number or string); nil
	// for a notification.
	ID json.RawMessage
	// Method is "" for a response (a client answering a server's request).
	Method string
	Params json.RawMessage
	// Raw is the message as sent.
	Raw json.RawMessage
}

// Body is a parsed POST body: one message, or a batch of them (2025-03-26).
type Body struct {
	Batch    bool
	Messages []Message
}

// Calls counts the tools/call messages of b.
func (b Body) Calls() int {
	n := 0
	for _, m := range b.Messages {
		if m.Method == MethodCallTool {
			n++
		}
	}
	return n
}

// Parse reads a POST body. Malformed JSON and duplicate keys wrap
// ErrParse; anything that is not a JSON-RPC 2.0 message (or a non-empty
// batch of them) wraps ErrInvalidRequest. A tools/call without an id (a
// notification) is refused too: the server would run it and nobody could
// be answered.
func Parse(body []byte) (Body, error) {
	t := bytes.TrimLeft(body, " \t\r\n")
	if !json.Valid(t) {
		return Body{}, fmt.Errorf("%w: not valid JSON", ErrParse)
	}
	if len(t) > 0 && t[0] == '[' {
		var items []json.RawMessage
		if err := json.Unmarshal(t, &items); err != nil {
			return Body{}, fmt.Errorf("%w: %v", ErrInvalidRequest, err)
		}
		if len(items) == 0 {
			return Body{}, fmt.Errorf("%w: empty batch", ErrInvalidRequest)
		}
		b := Body{Batch: true, Messages: make([]Message, len(items))}
		for i, it := range items {
			m, err := parseMessage(it)
			if err != nil {
				return Body{}, fmt.Errorf("batch item %d: %w", i, err)
			}
			b.Messages[i] = m
		}
		return b, nil
	}
	m, err := parseMessage(t)
	if err != nil {
		return Body{}, err
	}
	return Body{Messages: []Message{m}}, nil
}

func parseMessage(raw []byte) (Message, error) {
	ms, err := members(raw)
	if err != nil {
		return Message{}, err
	}
	if v := ms["jsonrpc"]; string(v) != `"2.0"` {
		return Message{}, fmt.Errorf(`%w: want "jsonrpc": "2.0"`, ErrInvalidRequest)
	}
	m := Message{Raw: raw, Params: ms["params"]}
	if id, ok := ms["id"]; ok {
		if !validID(id) {
			return Message{}, fmt.Errorf("%w: id must be a string or a number", ErrInvalidRequest)
		}
		m.ID = id
	}
	method, hasMethod := ms["method"]
	_, hasResult := ms["result"]
	_, hasError := ms["error"]
	switch {
	case hasMethod:
		if err := json.Unmarshal(method, &m.Method); err != nil || m.Method == "" {
			return Message{}, fmt.Errorf("%w: method must be a non-empty string", ErrInvalidRequest)
		}
		if m.Method == MethodCallTool && m.ID == nil {
			return Message{}, fmt.Errorf("%w: tools/call needs an id (it cannot be a notification)", ErrInvalidRequest)
		}
	case hasResult || hasError:
		if m.ID == nil {
			return Message{}, fmt.Errorf("%w: a response needs an id", ErrInvalidRequest)
		}
	default:
		return Message{}, fmt.Errorf("%w: neither a request (method) nor a response (result or error)", ErrInvalidRequest)
	}
	return m, nil
}

func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	switch id[0] {
	case '"':
		return true
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return true
	}
	return false
}
