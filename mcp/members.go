package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// members splits a JSON object into its members, refusing duplicate keys:
// decoders disagree on which of two equal keys wins, so such a message
// could be read two ways. The values are raw's own bytes, not copies.
//
// Every message is split at least twice (the message, then its params or
// result), so valid input is walked directly once encoding/json has
// checked it; invalid input goes through the decoder, whose error says
// where it went wrong.
func members(raw []byte) (map[string]json.RawMessage, error) {
	if !json.Valid(raw) {
		return decodeMembers(raw)
	}
	i := skipSpace(raw, 0)
	if raw[i] != '{' {
		return nil, fmt.Errorf("%w: want a JSON object", ErrInvalidRequest)
	}
	out := make(map[string]json.RawMessage, 4)
	i = skipSpace(raw, i+1)
	for raw[i] != '}' {
		end := valueEnd(raw, i)
		k, err := memberKey(raw[i:end])
		if err != nil {
			return nil, err
		}
		i = skipSpace(raw, skipSpace(raw, end)+1) // past the ':'
		end = valueEnd(raw, i)
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("%w: duplicate key %q", ErrParse, k)
		}
		out[k] = json.RawMessage(raw[i:end:end])
		if i = skipSpace(raw, end); raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	return out, nil
}

// memberKey is the string a quoted key of valid JSON decodes to; a key
// with escapes or bytes beyond ASCII goes through encoding/json, so that
// two spellings of one key (or two invalid UTF-8 sequences it replaces
// alike) are one key here too.
func memberKey(quoted []byte) (string, error) {
	plain := true
	for _, c := range quoted {
		if c == '\\' || c >= 0x80 {
			plain = false
			break
		}
	}
	if plain {
		return string(quoted[1 : len(quoted)-1]), nil
	}
	var k string
	if err := json.Unmarshal(quoted, &k); err != nil {
		return "", fmt.Errorf("%w: %v", ErrParse, err)
	}
	return k, nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// valueEnd is the index just past the value that starts at b[i], in JSON
// already known to be valid.
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = stringEnd(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return i
	default: // a number, true, false or null
		for i < len(b) {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
			i++
		}
		return i
	}
}

// stringEnd is the index just past the string whose opening quote is b[i].
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}

// decodeMembers is members by encoding/json's decoder, for input that is
// not valid JSON: its error names what is wrong.
func decodeMembers(raw []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrParse, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("%w: want a JSON object", ErrInvalidRequest)
	}
	out := make(map[string]json.RawMessage)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrParse, err)
		}
		k, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrParse, err)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("%w: duplicate key %q", ErrParse, k)
		}
		out[k] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrParse, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: data after the message", ErrParse)
	}
	return out, nil
}
