package mcp

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzMessage feeds arbitrary bodies to the parsers: they never panic, a
// tools/call they accept has a name and object arguments, and a response
// they accept renders as valid JSON under any accepted id.
func FuzzMessage(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":[1,2]}}}`))
	f.Add([]byte(`[{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"y"}}]`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":2,"result":{"isError":true,"content":[]}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"m","data":{}}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		b, err := Parse(body)
		if err == nil {
			for _, m := range b.Messages {
				if m.Method != MethodCallTool {
					continue
				}
				c, err := ParseCall(m)
				if err == nil && (c.Name == "" || !json.Valid(c.Arguments) || bytes.TrimSpace(c.Arguments)[0] != '{') {
					t.Fatalf("ParseCall accepted %q as %+v", m.Params, c)
				}
			}
		}
		r, err := ParseResponse(body)
		if err == nil {
			if out := r.WithID(json.RawMessage(`"id"`)); !json.Valid(out) {
				t.Fatalf("WithID rendered invalid JSON %q from %q", out, body)
			}
			_ = r.Classify()
		}
		_, _ = ReadResponse("text/event-stream", bytes.NewReader(body), []byte(`1`), 1<<16)
		// A JSON answer is taken only as the response to the request's id.
		if raw, err := ReadResponse("application/json", bytes.NewReader(body), []byte(`1`), 1<<16); err == nil {
			r, err := ParseResponse(raw)
			if err != nil || !SameID(r.ID, []byte(`1`)) {
				t.Fatalf("ReadResponse took %q as the response to id 1 (%v)", body, err)
			}
		}
	})
}

// FuzzMembers holds the direct walk of valid JSON to what encoding/json's
// decoder reads: the same members with the same bytes, and the same
// refusals.
func FuzzMembers(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":[1,"}",{"b":null}]}}}`,
		` { "a" : -1.5e3 , "b":true,"c":false,"d":null, "e":"\"}\\" } `,
		`{"a":1,"\u0061":2}`, `{"\u00e9":1,"é":2}`, "{\"a\xff\":1,\"a\xfe\":2}",
		`{}`, `[]`, `"s"`, `{"a":1}x`, `{"a":1,"a":2}`, `{"a":}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, gerr := members(raw)
		want, werr := decodeMembers(raw)
		if (gerr == nil) != (werr == nil) {
			t.Fatalf("members(%q): error %v, the decoder's %v", raw, gerr, werr)
		}
		if gerr != nil {
			return
		}
		if len(got) != len(want) {
			t.Fatalf("members(%q) = %d members, the decoder %d", raw, len(got), len(want))
		}
		for k, v := range want {
			if g, ok := got[k]; !ok || !bytes.Equal(g, v) {
				t.Fatalf("members(%q)[%q] = %q, the decoder %q", raw, k, g, v)
			}
		}
	})
}
