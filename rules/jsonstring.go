package rules

import (
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// string copies the JSON string at c.pos to dst in canonical form.
func (c *canon) string(dst []byte) ([]byte, error) {
	// Fast path: printable ASCII without escapes is already canonical.
	i := c.pos + 1
	for i < len(c.src) && plain(c.src[i]) {
		i++
	}
	if i < len(c.src) && c.src[i] == '"' {
		dst = append(dst, c.src[c.pos:i+1]...)
		c.pos = i + 1
		return dst, nil
	}
	var err error
	if c.tmp, err = c.decodeString(c.tmp[:0]); err != nil {
		return dst, err
	}
	return appendString(dst, bstr(c.tmp)), nil
}

// decodeString appends the decoded contents of the JSON string at c.pos to
// dst, replacing lone surrogates with U+FFFD; invalid UTF-8 is an error.
func (c *canon) decodeString(dst []byte) ([]byte, error) {
	start := c.pos
	c.pos++ // opening quote
	for c.pos < len(c.src) {
		run := c.pos
		for c.pos < len(c.src) && plain(c.src[c.pos]) {
			c.pos++
		}
		dst = append(dst, c.src[run:c.pos]...)
		if c.pos == len(c.src) {
			break
		}
		b := c.src[c.pos]
		switch {
		case b == '"':
			c.pos++
			return dst, nil
		case b == '\\':
			var err error
			if dst, err = c.escape(dst); err != nil {
				return dst, err
			}
		case b < 0x20:
			return dst, c.errorf("control character 0x%02x in string", b)
		case b < 0x80:
			dst = append(dst, b)
			c.pos++
		default:
			r, size := utf8.DecodeRune(c.src[c.pos:])
			if r == utf8.RuneError && size == 1 {
				// Replaced by U+FFFD, distinct bytes would give one key.
				return dst, c.errorf("invalid UTF-8 in string")
			}
			dst = append(dst, c.src[c.pos:c.pos+size]...)
			c.pos += size
		}
	}
	return dst, c.errorAt(start, "unterminated string")
}

// plain reports whether b stands for itself in a canonical JSON string.
func plain(b byte) bool { return b >= 0x20 && b < 0x80 && b != '"' && b != '\\' }

// escape decodes the escape sequence at c.pos.
func (c *canon) escape(dst []byte) ([]byte, error) {
	if c.pos+1 >= len(c.src) {
		return dst, c.errorf("unterminated escape sequence")
	}
	e := c.src[c.pos+1]
	if e != 'u' {
		d, ok := unescapeByte(e)
		if !ok {
			return dst, c.errorf("invalid escape sequence \\%c", e)
		}
		c.pos += 2
		return append(dst, d), nil
	}
	r, ok := c.hex4(c.pos + 2)
	if !ok {
		return dst, c.errorf("invalid \\u escape")
	}
	c.pos += 6
	if utf16.IsSurrogate(r) {
		// Only a high surrogate pairs with a following low one; anything
		// else is a lone surrogate, one U+FFFD each (as encoding/json).
		if r2, ok := c.lowSurrogate(); ok && r < 0xdc00 {
			r = utf16.DecodeRune(r, r2)
			c.pos += 6
		} else {
			r = utf8.RuneError
		}
	}
	return utf8.AppendRune(dst, r), nil
}

// lowSurrogate reads a \uDC00-\uDFFF escape at c.pos, if there is one.
func (c *canon) lowSurrogate() (rune, bool) {
	if c.pos+1 >= len(c.src) || c.src[c.pos] != '\\' || c.src[c.pos+1] != 'u' {
		return 0, false
	}
	r, ok := c.hex4(c.pos + 2)
	return r, ok && r >= 0xdc00 && r <= 0xdfff
}

func (c *canon) hex4(at int) (rune, bool) {
	if at+4 > len(c.src) {
		return 0, false
	}
	var r rune
	for _, b := range c.src[at : at+4] {
		var d byte
		switch {
		case b >= '0' && b <= '9':
			d = b - '0'
		case b >= 'a' && b <= 'f':
			d = b - 'a' + 10
		case b >= 'A' && b <= 'F':
			d = b - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	return r, true
}

func unescapeByte(e byte) (byte, bool) {
	switch e {
	case '"', '\\', '/':
		return e, true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	}
	return 0, false
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a canonical JSON string (RFC 8785): only '"',
// '\\' and control characters are escaped, the latter as \b \t \n \f \r or
// \u00xx. Invalid UTF-8 becomes U+FFFD.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		b := s[i]
		if b >= 0x80 {
			r, size := utf8.DecodeRuneInString(s[i:])
			dst = utf8.AppendRune(dst, r)
			i += size
			continue
		}
		i++
		switch {
		case b == '"' || b == '\\':
			dst = append(dst, '\\', b)
		case b >= 0x20:
			dst = append(dst, b)
		case b == '\b':
			dst = append(dst, '\\', 'b')
		case b == '\t':
			dst = append(dst, '\\', 't')
		case b == '\n':
			dst = append(dst, '\\', 'n')
		case b == '\f':
			dst = append(dst, '\\', 'f')
		case b == '\r':
			dst = append(dst, '\\', 'r')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xf])
		}
	}
	return append(dst, '"')
}

// bstr views b as a string without copying. The string must not outlive a
// change to b.
func bstr(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
