package rules

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
	"unicode/utf8"
)

// FuzzCanonicalJSON checks that canonicalization never panics, is
// idempotent, produces valid JSON, accepts everything encoding/json accepts
// (unless it has duplicate keys or invalid UTF-8, which encoding/json
// would replace), and gives equivalent encodings the same output. Seeds: testdata/fuzz/FuzzCanonicalJSON.
func FuzzCanonicalJSON(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := CanonicalJSON(nil, data)
		if err != nil {
			if !errors.Is(err, ErrInvalidBody) {
				t.Fatalf("error %v does not wrap ErrInvalidBody", err)
			}
			if json.Valid(data) && utf8.Valid(data) && !hasDuplicateKeys(t, data) {
				t.Fatalf("CanonicalJSON(%q) error = %v, but encoding/json accepts it", data, err)
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("CanonicalJSON(%q) = %q, not valid JSON", data, out)
		}
		again, err := CanonicalJSON(nil, out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("not idempotent: %q -> %q -> %q, %v", data, out, again, err)
		}
		for _, re := range reencodings(t, data) {
			got, err := CanonicalJSON(nil, re)
			if err != nil || !bytes.Equal(got, out) {
				t.Fatalf("re-encoding %q of %q canonicalizes to %q, %v; want %q", re, data, got, err, out)
			}
		}
	})
}

// reencodings returns data decoded by encoding/json (numbers kept as
// written) and encoded again, compact and indented.
func reencodings(t *testing.T, data []byte) [][]byte {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil
	}
	compact, err1 := json.Marshal(v)
	indented, err2 := json.MarshalIndent(v, " ", "\t")
	if err1 != nil || err2 != nil {
		t.Fatalf("re-encoding %q: %v %v", data, err1, err2)
	}
	return [][]byte{compact, indented}
}

// hasDuplicateKeys reports whether valid JSON has an object with a key
// twice (after decoding, as encoding/json compares them).
func hasDuplicateKeys(t *testing.T, data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type frame struct {
		keys   map[string]bool
		object bool
		atKey  bool
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return false
		}
		if err != nil {
			t.Fatalf("Token(%q): %v", data, err)
		}
		var top *frame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		if key, ok := tok.(string); ok && top != nil && top.object && top.atKey {
			if top.keys[key] {
				return true
			}
			top.keys[key] = true
			top.atKey = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, frame{keys: map[string]bool{}, object: true, atKey: true})
			continue
		case json.Delim('['):
			stack = append(stack, frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].atKey = true
		}
	}
}

// FuzzParse checks that the rule parser never panics and that whatever it
// accepts can be put in a Set and matched against. Seeds:
// testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		api, err := Parse("fuzz.yaml", data)
		if err != nil {
			var es *Errors
			if !errors.As(err, &es) || len(es.List) == 0 {
				t.Fatalf("Parse error %T %v, want a non-empty *Errors", err, err)
			}
			return
		}
		set, err := NewSet(api)
		if err != nil {
			t.Fatalf("NewSet of one valid api: %v", err)
		}
		for _, h := range api.Hosts {
			set.Intercepts(h)
			for _, r := range api.Routes {
				set.Match(h, r.Method, r.Pattern)
			}
			if r, _ := set.Match(h, "DELETE", "/fuzz/unlisted"); r != nil && !r.Unlisted() && r.Method != "DELETE" {
				t.Fatalf("DELETE matched route %s of method %s", r.Name, r.Method)
			}
			if r, _ := set.Match(h, "GET", "/fuzz/unlisted"); r.Unlisted() {
				t.Fatalf("a read matched the route of unlisted writes")
			}
		}
	})
}
