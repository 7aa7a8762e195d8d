package rules

import (
	"slices"
	"sync"
	"unicode/utf8"
)

// maxDepth bounds the nesting of arrays and objects, as encoding/json does.
const maxDepth = 10000

// CanonicalJSON appends the canonical form of the JSON value in src to dst:
// no insignificant whitespace, object members sorted by key (UTF-16 code
// units, as RFC 8785), numbers normalised (see appendNumber), strings
// re-escaped minimally with \u escapes of printable characters decoded.
// Lone surrogates become U+FFFD, as encoding/json does. Invalid UTF-8 is
// an error (encoding/json would replace it with U+FFFD too, and distinct
// bytes would then give one key).
//
// Malformed JSON and objects with duplicate keys give a *SyntaxError (which
// wraps ErrInvalidBody); dst is then returned unchanged. Canonicalizing
// canonical JSON returns it unchanged.
func CanonicalJSON(dst, src []byte) ([]byte, error) {
	c := getCanon()
	defer putCanon(c)
	return c.canonical(dst, src)
}

// canon is the reusable state of one canonicalization. Its buffers are
// stacks shared by every nesting level.
type canon struct {
	src     []byte
	pos     int
	depth   int
	members []member
	keys    []byte // decoded keys of the open objects
	tmp     []byte // reorder, string-decoding and form scratch
	pairs   []formPair
}

// member is one object member already written to dst.
type member struct {
	key        [2]int // decoded key in canon.keys
	start, end int    // the member in dst, key to end of value
	srcPos     int    // offset of the key in src
}

var canonPool = sync.Pool{New: func() any { return new(canon) }}

func getCanon() *canon { return canonPool.Get().(*canon) }

func putCanon(c *canon) {
	if cap(c.tmp) > 1<<20 || cap(c.keys) > 1<<20 {
		return // don't pin huge buffers
	}
	c.src = nil
	canonPool.Put(c)
}

func (c *canon) canonical(dst, src []byte) ([]byte, error) {
	c.src, c.pos, c.depth = src, 0, 0
	c.members, c.keys = c.members[:0], c.keys[:0]
	start := len(dst)
	dst, err := c.value(dst)
	if err == nil {
		c.skipSpace()
		if c.pos < len(c.src) {
			err = c.errorf("unexpected %s after top-level value", c.describe())
		}
	}
	if err != nil {
		return dst[:start], err
	}
	return dst, nil
}

func (c *canon) errorf(msg string, args ...any) error {
	return c.errorAt(c.pos, msg, args...)
}

func (c *canon) errorAt(pos int, msg string, args ...any) error {
	if len(args) > 0 {
		msg = sprintf(msg, args...)
	}
	return &SyntaxError{What: "JSON", Offset: pos, Msg: msg}
}

// describe names the byte at pos for messages.
func (c *canon) describe() string {
	if c.pos >= len(c.src) {
		return "end of input"
	}
	b := c.src[c.pos]
	if b >= 0x20 && b < 0x7f {
		return sprintf("character %q", b)
	}
	return sprintf("byte 0x%02x", b)
}

func (c *canon) skipSpace() {
	for c.pos < len(c.src) {
		switch c.src[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

func (c *canon) value(dst []byte) ([]byte, error) {
	c.skipSpace()
	if c.pos >= len(c.src) {
		return dst, c.errorf("unexpected end of input, want a value")
	}
	switch b := c.src[c.pos]; {
	case b == '{':
		return c.object(dst)
	case b == '[':
		return c.array(dst)
	case b == '"':
		return c.string(dst)
	case b == 't':
		return c.literal(dst, "true")
	case b == 'f':
		return c.literal(dst, "false")
	case b == 'n':
		return c.literal(dst, "null")
	case b == '-' || (b >= '0' && b <= '9'):
		return c.number(dst)
	}
	return dst, c.errorf("unexpected %s, want a value", c.describe())
}

func (c *canon) literal(dst []byte, lit string) ([]byte, error) {
	if len(c.src)-c.pos < len(lit) || string(c.src[c.pos:c.pos+len(lit)]) != lit {
		return dst, c.errorf("invalid literal, want %s", lit)
	}
	c.pos += len(lit)
	return append(dst, lit...), nil
}

func (c *canon) enter() error {
	c.depth++
	if c.depth > maxDepth {
		return c.errorf("nesting deeper than %d", maxDepth)
	}
	return nil
}

func (c *canon) array(dst []byte) ([]byte, error) {
	if err := c.enter(); err != nil {
		return dst, err
	}
	c.pos++ // '['
	dst = append(dst, '[')
	c.skipSpace()
	if c.pos < len(c.src) && c.src[c.pos] == ']' {
		c.pos++
		c.depth--
		return append(dst, ']'), nil
	}
	for {
		var err error
		if dst, err = c.value(dst); err != nil {
			return dst, err
		}
		c.skipSpace()
		if c.pos >= len(c.src) {
			return dst, c.errorf("unexpected end of input, want ',' or ']'")
		}
		switch c.src[c.pos] {
		case ',':
			c.pos++
			dst = append(dst, ',')
			continue
		case ']':
			c.pos++
			c.depth--
			return append(dst, ']'), nil
		}
		return dst, c.errorf("unexpected %s, want ',' or ']'", c.describe())
	}
}

func (c *canon) object(dst []byte) ([]byte, error) {
	if err := c.enter(); err != nil {
		return dst, err
	}
	c.pos++ // '{'
	objStart := len(dst)
	dst = append(dst, '{')
	c.skipSpace()
	if c.pos < len(c.src) && c.src[c.pos] == '}' {
		c.pos++
		c.depth--
		return append(dst, '}'), nil
	}
	mbase, kbase := len(c.members), len(c.keys)
	sorted := true
	for {
		var err error
		var m member
		if dst, m, err = c.member(dst); err != nil {
			return dst, err
		}
		if n := len(c.members); n > mbase {
			switch compareKeys(c.keyOf(c.members[n-1]), c.keyOf(m)) {
			case 0:
				return dst, c.errorAt(m.srcPos, "duplicate key %q", c.keyOf(m))
			case 1:
				sorted = false
			}
		}
		c.members = append(c.members, m)
		c.skipSpace()
		if c.pos >= len(c.src) {
			return dst, c.errorf("unexpected end of input, want ',' or '}'")
		}
		if c.src[c.pos] == ',' {
			c.pos++
			dst = append(dst, ',')
			continue
		}
		if c.src[c.pos] != '}' {
			return dst, c.errorf("unexpected %s, want ',' or '}'", c.describe())
		}
		c.pos++
		break
	}
	dst = append(dst, '}')
	var err error
	if !sorted {
		dst, err = c.sortMembers(dst, objStart, c.members[mbase:])
	}
	c.members, c.keys = c.members[:mbase], c.keys[:kbase]
	c.depth--
	return dst, err
}

// member reads one "key": value pair and writes it canonically to dst.
func (c *canon) member(dst []byte) ([]byte, member, error) {
	c.skipSpace()
	m := member{start: len(dst), srcPos: c.pos}
	if c.pos >= len(c.src) || c.src[c.pos] != '"' {
		return dst, m, c.errorf("unexpected %s, want an object key", c.describe())
	}
	ks := len(c.keys)
	var err error
	if c.keys, err = c.decodeString(c.keys); err != nil {
		return dst, m, err
	}
	m.key = [2]int{ks, len(c.keys)}
	dst = appendString(dst, bstr(c.keys[ks:]))
	c.skipSpace()
	if c.pos >= len(c.src) || c.src[c.pos] != ':' {
		return dst, m, c.errorf("unexpected %s, want ':' after object key", c.describe())
	}
	c.pos++
	dst = append(dst, ':')
	if dst, err = c.value(dst); err != nil {
		return dst, m, err
	}
	m.end = len(dst)
	return dst, m, nil
}

func (c *canon) keyOf(m member) []byte { return c.keys[m.key[0]:m.key[1]] }

// sortMembers rewrites the object at dst[start:] with its members in key
// order.
func (c *canon) sortMembers(dst []byte, start int, ms []member) ([]byte, error) {
	slices.SortFunc(ms, func(a, b member) int { return compareKeys(c.keyOf(a), c.keyOf(b)) })
	for i := 1; i < len(ms); i++ {
		if compareKeys(c.keyOf(ms[i-1]), c.keyOf(ms[i])) == 0 {
			return dst, c.errorAt(max(ms[i-1].srcPos, ms[i].srcPos), "duplicate key %q", c.keyOf(ms[i]))
		}
	}
	c.tmp = append(c.tmp[:0], dst[start:]...)
	dst = append(dst[:start], '{')
	for i, m := range ms {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, c.tmp[m.start-start:m.end-start]...)
	}
	return append(dst, '}'), nil
}

// compareKeys orders decoded (valid UTF-8) keys by their UTF-16 code units,
// as RFC 8785 requires. That is byte order except where a character at or
// above U+E000 meets one above U+FFFF.
func compareKeys(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return cmpInt(len(a), len(b))
	}
	if a[i] < 0x80 && b[i] < 0x80 {
		return cmpInt(int(a[i]), int(b[i]))
	}
	for i > 0 && !utf8.RuneStart(a[i]) {
		i--
	}
	ra, _ := utf8.DecodeRune(a[i:])
	rb, _ := utf8.DecodeRune(b[i:])
	return cmpInt(utf16Key(ra), utf16Key(rb))
}

// utf16Key maps a rune to a value that sorts like its UTF-16 encoding.
func utf16Key(r rune) int {
	if r < 0x10000 {
		return int(r) << 10
	}
	r -= 0x10000
	return (0xd800+int(r>>10))<<10 | int(r&0x3ff)
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
