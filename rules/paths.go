package rules

import (
	"errors"
	"fmt"
	"strings"
)

// gjsonModifiers are the modifiers gjson knows; "@name" with another name
// would silently read a key instead.
var gjsonModifiers = map[string]bool{
	"pretty": true, "ugly": true, "reverse": true, "this": true, "flatten": true,
	"join": true, "valid": true, "keys": true, "values": true, "tostr": true,
	"fromstr": true, "group": true, "dig": true,
}

// validPath checks the syntax of a gjson path as far as it can be checked
// without a document: non-empty, no empty components, balanced brackets
// and quotes, known modifiers, no dangling escape.
func validPath(p string) error {
	if p == "" {
		return errors.New("empty path")
	}
	var stack []byte
	inQuote := false
	compLen := 0 // length of the current component outside brackets
	for i := 0; i < len(p); i++ {
		b := p[i]
		switch {
		case b == '\\':
			if i+1 == len(p) {
				return errors.New("path ends in a dangling '\\'")
			}
			i++
			compLen++
		case inQuote:
			inQuote = b != '"'
		case b == '"' && len(stack) > 0:
			inQuote = true
		case b == '(' || b == '[' || b == '{':
			stack = append(stack, closer(b))
			compLen++
		case b == ')' || b == ']' || b == '}':
			if len(stack) == 0 || stack[len(stack)-1] != b {
				return errors.New("unbalanced " + string(b))
			}
			stack = stack[:len(stack)-1]
			compLen++
		case (b == '.' || b == '|') && len(stack) == 0:
			if compLen == 0 {
				return errors.New("empty path component")
			}
			compLen = 0
		case b == '@' && len(stack) == 0 && compLen == 0:
			name := p[i+1:]
			if j := strings.IndexAny(name, ".|:"); j >= 0 {
				name = name[:j]
			}
			if !gjsonModifiers[name] {
				return errors.New("unknown modifier @" + name)
			}
			compLen++
		default:
			compLen++
		}
	}
	switch {
	case inQuote:
		return errors.New("unterminated string")
	case len(stack) > 0:
		return errors.New("missing " + string(stack[len(stack)-1]))
	case compLen == 0:
		return errors.New("empty path component")
	}
	return nil
}

func closer(b byte) byte {
	switch b {
	case '(':
		return ')'
	case '[':
		return ']'
	}
	return '}'
}

// validSimplePath checks the restricted path syntax of key.ignore and
// redact: dotted keys ('\' escapes the next character), array indices and
// '#' for every element of an array.
func validSimplePath(p string) error {
	if p == "" {
		return errors.New("empty path")
	}
	for rest := p; ; {
		comp, next, more := nextComponent(rest)
		if comp == "" {
			return errors.New("empty path component")
		}
		if comp != "#" {
			for i := 0; i < len(comp); i++ {
				if comp[i] == '\\' {
					if i+1 == len(comp) {
						return errors.New("path ends in a dangling '\\'")
					}
					i++
					continue
				}
				if strings.IndexByte("*?|#@!()[]{}", comp[i]) >= 0 {
					return fmt.Errorf("%q is not supported here (want dotted keys, indices and #; escape special characters with \\)", comp[i])
				}
			}
		}
		if !more {
			return nil
		}
		rest = next
	}
}

// nextComponent splits the first component off a dotted path: comp is
// still escaped; more says whether a '.' followed it.
func nextComponent(p string) (comp, rest string, more bool) {
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '.':
			return p[:i], p[i+1:], true
		}
	}
	return p, "", false
}

// componentIs reports whether the escaped path component comp names the
// decoded key.
func componentIs(comp string, key []byte) bool {
	if strings.IndexByte(comp, '\\') < 0 {
		return comp == string(key)
	}
	j := 0
	for i := 0; i < len(comp); i++ {
		if comp[i] == '\\' && i+1 < len(comp) {
			i++
		}
		if j >= len(key) || key[j] != comp[i] {
			return false
		}
		j++
	}
	return j == len(key)
}

// componentIndex is the array index a component names, or -1.
func componentIndex(comp string) int {
	if comp == "" || len(comp) > 9 {
		return -1
	}
	n := 0
	for i := 0; i < len(comp); i++ {
		if comp[i] < '0' || comp[i] > '9' {
			return -1
		}
		n = n*10 + int(comp[i]-'0')
	}
	return n
}

// samePathIn reports whether the gjson path p names the member that one of
// the paths in the syntax of key.ignore names: compared component by
// component, escapes removed.
func samePathIn(p string, simple []string) bool {
	want := unescapedPath(p)
	for _, s := range simple {
		if unescapedPath(s) == want {
			return true
		}
	}
	return false
}

// unescapedPath is p with its escapes removed and each unescaped '.'
// (between components) made a NUL.
func unescapedPath(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			if i+1 < len(p) {
				i++
				b.WriteByte(p[i])
			}
		case '.':
			b.WriteByte(0)
		default:
			b.WriteByte(p[i])
		}
	}
	return b.String()
}
