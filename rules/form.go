package rules

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// formPair is one decoded key=value pair; both are ranges of canon.tmp.
type formPair struct {
	k, v [2]int
}

// CanonicalForm appends the canonical JSON object of a URL-encoded form or
// query string to dst: keys sorted as in CanonicalJSON; a key given once
// maps to a string, a key given several times to an array of its values in
// the order given. '+' means a space; a key without '=' has the value "".
// Malformed percent escapes give a *SyntaxError (wrapping ErrInvalidBody).
func CanonicalForm(dst []byte, src string) ([]byte, error) {
	c := getCanon()
	defer putCanon(c)
	return c.form(dst, src, "form body")
}

func (c *canon) form(dst []byte, src, what string) ([]byte, error) {
	c.tmp, c.pairs = c.tmp[:0], c.pairs[:0]
	for i := 0; i <= len(src); {
		end := strings.IndexByte(src[i:], '&')
		if end < 0 {
			end = len(src)
		} else {
			end += i
		}
		if seg := src[i:end]; seg != "" {
			if err := c.formPair(seg, i, what); err != nil {
				return dst, err
			}
		}
		i = end + 1
	}
	slices.SortStableFunc(c.pairs, func(a, b formPair) int {
		return compareKeys(c.tmp[a.k[0]:a.k[1]], c.tmp[b.k[0]:b.k[1]])
	})
	return c.appendPairs(dst), nil
}

// formPair decodes key=value starting at offset off of the input.
func (c *canon) formPair(seg string, off int, what string) error {
	key, val, _ := strings.Cut(seg, "=")
	var p formPair
	var err error
	p.k[0] = len(c.tmp)
	if c.tmp, err = unescapeForm(c.tmp, key, off, what); err != nil {
		return err
	}
	p.k[1], p.v[0] = len(c.tmp), len(c.tmp)
	if c.tmp, err = unescapeForm(c.tmp, val, off+len(key)+1, what); err != nil {
		return err
	}
	p.v[1] = len(c.tmp)
	c.pairs = append(c.pairs, p)
	return nil
}

func (c *canon) appendPairs(dst []byte) []byte {
	dst = append(dst, '{')
	ps := c.pairs
	for i := 0; i < len(ps); {
		key := c.tmp[ps[i].k[0]:ps[i].k[1]]
		j := i + 1
		for j < len(ps) && string(c.tmp[ps[j].k[0]:ps[j].k[1]]) == string(key) {
			j++
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, bstr(key))
		dst = append(dst, ':')
		if j-i == 1 {
			dst = appendString(dst, bstr(c.tmp[ps[i].v[0]:ps[i].v[1]]))
		} else {
			dst = append(dst, '[')
			for n, p := range ps[i:j] {
				if n > 0 {
					dst = append(dst, ',')
				}
				dst = appendString(dst, bstr(c.tmp[p.v[0]:p.v[1]]))
			}
			dst = append(dst, ']')
		}
		i = j
	}
	return append(dst, '}')
}

// unescapeForm appends the decoded form component s to dst. A component
// that does not decode to UTF-8 is an error: as JSON text its bytes would
// become U+FFFD, and distinct values would give one key.
func unescapeForm(dst []byte, s string, off int, what string) ([]byte, error) {
	start := len(dst)
	high := false
	for i := 0; i < len(s); i++ {
		switch b := s[i]; b {
		case '+':
			dst = append(dst, ' ')
		case '%':
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				bad := s[i:min(i+3, len(s))]
				return dst, &SyntaxError{What: what, Offset: off + i, Msg: sprintf("invalid escape %q", bad)}
			}
			b = unhex(s[i+1])<<4 | unhex(s[i+2])
			high = high || b >= 0x80
			dst = append(dst, b)
			i += 2
		default:
			high = high || b >= 0x80
			dst = append(dst, b)
		}
	}
	if high && !utf8.Valid(dst[start:]) {
		return dst, &SyntaxError{What: what, Offset: off, Msg: "decodes to invalid UTF-8 (binary values cannot be told apart in a key; encode them as text, e.g. base64)"}
	}
	return dst, nil
}

func isHex(b byte) bool {
	return (b >= '0' && b <= '9') || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F')
}

func unhex(b byte) byte {
	switch {
	case b >= 'a':
		return b - 'a' + 10
	case b >= 'A':
		return b - 'A' + 10
	}
	return b - '0'
}
