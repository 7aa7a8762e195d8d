package rules

import (
	"bytes"
	"strings"
)

// stripper removes the members and elements that key.ignore paths name from
// a canonical JSON document or, in redact mode, replaces their values. Its
// buffers are reused between calls.
type stripper struct {
	stack []string // remaining paths of every open level
	key   []byte   // decoded key scratch
	// formArrays: a last path component NAME[] also names the members
	// NAME[0], NAME[1], ...: the two ways a form spells an array
	// (expand[]=a and expand[0]=a). Set for the volatile paths.
	formArrays bool

	// Redact mode (redact != nil): values are replaced by
	// "redacted:" + hex HMAC(redact, api + "\x00" + canonical value).
	redact []byte
	api    string
	mac    []byte
}

// redactDoc appends doc with the values at paths replaced by their HMAC
// under secret, so that they still tell intents apart but can be stored.
func (s *stripper) redactDoc(dst, doc []byte, paths []string, secret []byte, api string) []byte {
	s.redact, s.api = secret, api
	if s.redact == nil {
		s.redact = []byte{}
	}
	dst = s.strip(dst, doc, paths)
	s.redact, s.api = nil, ""
	return dst
}

// replaced writes the redacted form of value v.
func (s *stripper) replaced(dst, v []byte) []byte {
	dst = append(dst, `"redacted:`...)
	dst = appendHMAC(dst, &s.mac, s.redact, s.api, v)
	return append(dst, '"')
}

// strip appends the canonical value v to dst without what paths name.
func (s *stripper) strip(dst, v []byte, paths []string) []byte {
	if len(paths) == 0 || len(v) == 0 {
		return append(dst, v...)
	}
	switch v[0] {
	case '{':
		return s.object(dst, v, paths)
	case '[':
		return s.array(dst, v, paths)
	}
	return append(dst, v...)
}

func (s *stripper) object(dst, v []byte, paths []string) []byte {
	dst = append(dst, '{')
	first := true
	for i := 1; v[i] != '}'; {
		ks := i
		i = skipValue(v, i)
		key := v[ks+1 : i-1]
		vs := i + 1 // past ':'
		ve := skipValue(v, vs)
		i = ve
		if v[i] == ',' {
			i++
		}
		s.key = decodeCanonical(s.key[:0], key)
		base := len(s.stack)
		drop := false
		for _, p := range paths {
			comp, rest, more := nextComponent(p)
			if componentIs(comp, s.key) || (!more && s.formArrays && formArrayMember(comp, s.key)) {
				if !more {
					drop = true
					break
				}
				s.stack = append(s.stack, rest)
			}
		}
		switch {
		case !drop:
			dst = s.comma(dst, &first)
			dst = append(dst, v[ks:vs]...)
			dst = s.strip(dst, v[vs:ve], s.stack[base:])
		case s.redact != nil:
			dst = s.comma(dst, &first)
			dst = append(dst, v[ks:vs]...)
			dst = s.replaced(dst, v[vs:ve])
		}
		s.stack = s.stack[:base]
	}
	return append(dst, '}')
}

func (s *stripper) array(dst, v []byte, paths []string) []byte {
	dst = append(dst, '[')
	first := true
	for i, idx := 1, 0; v[i] != ']'; idx++ {
		es := i
		i = skipValue(v, i)
		elem := v[es:i]
		if v[i] == ',' {
			i++
		}
		base := len(s.stack)
		drop := false
		for _, p := range paths {
			comp, rest, more := nextComponent(p)
			if comp == "#" || componentIndex(comp) == idx {
				if !more {
					drop = true
					break
				}
				s.stack = append(s.stack, rest)
			}
		}
		switch {
		case !drop:
			dst = s.comma(dst, &first)
			dst = s.strip(dst, elem, s.stack[base:])
		case s.redact != nil:
			dst = s.comma(dst, &first)
			dst = s.replaced(dst, elem)
		}
		s.stack = s.stack[:base]
	}
	return append(dst, ']')
}

func (s *stripper) comma(dst []byte, first *bool) []byte {
	if !*first {
		dst = append(dst, ',')
	}
	*first = false
	return dst
}

// skipValue returns the end of the canonical JSON value (or key) at v[i].
func skipValue(v []byte, i int) int {
	depth := 0
	for ; i < len(v); i++ {
		switch v[i] {
		case '"':
			for i++; v[i] != '"'; i++ {
				if v[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i
			}
			depth--
		case ',', ':':
			if depth == 0 {
				return i
			}
		}
		if depth == 0 && (v[i] == '"' || v[i] == '}' || v[i] == ']') {
			return i + 1
		}
	}
	return i
}

// decodeCanonical appends the text of a canonical JSON string's contents
// (without quotes): the only escapes are \" \\ \b \f \n \r \t and \u00xx.
func decodeCanonical(dst, s []byte) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			dst = append(dst, s[i])
			continue
		}
		i++
		if s[i] == 'u' {
			dst = append(dst, unhex(s[i+3])<<4|unhex(s[i+4]))
			i += 4
			continue
		}
		b, _ := unescapeByte(s[i])
		dst = append(dst, b)
	}
	return dst
}

// formArrayMember reports whether the escaped path component comp, which
// ends in an escaped "[]", names the decoded key as an indexed element:
// comp NAME\[\] and key NAME[12].
func formArrayMember(comp string, key []byte) bool {
	base, ok := strings.CutSuffix(comp, `\[\]`)
	if !ok || len(key) < 3 || key[len(key)-1] != ']' {
		return false
	}
	open := bytes.LastIndexByte(key, '[')
	if open < 0 || open+2 > len(key)-1 || componentIndex(string(key[open+1:len(key)-1])) < 0 {
		return false
	}
	return componentIs(base, key[:open])
}
