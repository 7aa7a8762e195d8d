package rules

import (
	"errors"
	"fmt"
	"strings"
)

// gqlLexer reads the top level of a GraphQL executable document: enough
// to list its operations (type, name, first root field) while skipping
// fragments, variable definitions, directives, arguments and nested
// selections token by token, so that braces inside strings and comments
// never mislead it.
type gqlLexer struct {
	src string
	off int
}

// token kinds
const (
	tokEOF = iota
	tokName
	tokPunct  // one of ! $ & ( ) : = @ [ ] { | } and "..."
	tokString // "..." or """..."""
	tokNumber
)

type gqlToken struct {
	kind int
	text string
}

var errGQLEOF = errors.New("unexpected end of document")

// next returns the next token, skipping white space, commas, the BOM and
// comments.
func (l *gqlLexer) next() (gqlToken, error) {
	for l.off < len(l.src) {
		c := l.src[l.off]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',':
			l.off++
			continue
		case strings.HasPrefix(l.src[l.off:], "\uFEFF"):
			l.off += len("\uFEFF")
			continue
		case c == '#':
			for l.off < len(l.src) && l.src[l.off] != '\n' && l.src[l.off] != '\r' {
				l.off++
			}
			continue
		}
		return l.token()
	}
	return gqlToken{kind: tokEOF}, nil
}

func (l *gqlLexer) token() (gqlToken, error) {
	start := l.off
	c := l.src[l.off]
	switch {
	case strings.HasPrefix(l.src[l.off:], "..."):
		l.off += 3
		return gqlToken{tokPunct, "..."}, nil
	case strings.IndexByte("!$&():=@[]{|}", c) >= 0:
		l.off++
		return gqlToken{tokPunct, string(c)}, nil
	case c == '"':
		return l.str()
	case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		for l.off < len(l.src) && isNameByte(l.src[l.off]) {
			l.off++
		}
		return gqlToken{tokName, l.src[start:l.off]}, nil
	case c == '-' || c >= '0' && c <= '9':
		l.off++
		for l.off < len(l.src) && (isNameByte(l.src[l.off]) || strings.IndexByte(".+-", l.src[l.off]) >= 0) {
			l.off++
		}
		return gqlToken{tokNumber, l.src[start:l.off]}, nil
	}
	return gqlToken{}, fmt.Errorf("unexpected character %q at offset %d", c, start)
}

func isNameByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// str reads a string or block string.
func (l *gqlLexer) str() (gqlToken, error) {
	start := l.off
	if strings.HasPrefix(l.src[l.off:], `"""`) {
		for i := l.off + 3; i+3 <= len(l.src); i++ {
			switch {
			case strings.HasPrefix(l.src[i:], `\"""`):
				i += 3
			case strings.HasPrefix(l.src[i:], `"""`):
				l.off = i + 3
				return gqlToken{tokString, l.src[start:l.off]}, nil
			}
		}
		return gqlToken{}, fmt.Errorf("unterminated block string at offset %d", start)
	}
	for i := l.off + 1; i < len(l.src); i++ {
		switch l.src[i] {
		case '\\':
			i++
		case '\n', '\r':
			return gqlToken{}, fmt.Errorf("unterminated string at offset %d", start)
		case '"':
			l.off = i + 1
			return gqlToken{tokString, l.src[start:l.off]}, nil
		}
	}
	return gqlToken{}, fmt.Errorf("unterminated string at offset %d", start)
}

// operations lists the operations of the document.
func (l *gqlLexer) operations() ([]GraphQLOperation, error) {
	var ops []GraphQLOperation
	for {
		t, err := l.next()
		if err != nil {
			return nil, err
		}
		switch {
		case t.kind == tokEOF:
			return ops, nil
		case t.kind == tokPunct && t.text == "{":
			// The query shorthand: an anonymous query.
			f, err := l.selectionSet()
			if err != nil {
				return nil, err
			}
			ops = append(ops, GraphQLOperation{Type: "query", Field: f})
		case t.kind == tokName && (t.text == "query" || t.text == "mutation" || t.text == "subscription"):
			op, err := l.operation(t.text)
			if err != nil {
				return nil, err
			}
			ops = append(ops, op)
		case t.kind == tokName && t.text == "fragment":
			if err := l.fragment(); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("unexpected %q at offset %d (want an operation or a fragment)", t.text, l.off-len(t.text))
		}
	}
}

// operation reads the rest of an operation definition after its type.
func (l *gqlLexer) operation(typ string) (GraphQLOperation, error) {
	op := GraphQLOperation{Type: typ}
	t, err := l.next()
	if err != nil {
		return op, err
	}
	if t.kind == tokName {
		op.Name = t.text
		if t, err = l.next(); err != nil {
			return op, err
		}
	}
	if t.kind == tokPunct && t.text == "(" {
		if err := l.skipUntil(")"); err != nil {
			return op, err
		}
		if t, err = l.next(); err != nil {
			return op, err
		}
	}
	if t, err = l.directives(t); err != nil {
		return op, err
	}
	if t.kind != tokPunct || t.text != "{" {
		return op, fmt.Errorf("operation %q: want a selection set", op.Name)
	}
	op.Field, err = l.selectionSet()
	return op, err
}

// fragment skips a fragment definition: name, on Type, directives,
// selection set.
func (l *gqlLexer) fragment() error {
	for {
		t, err := l.next()
		switch {
		case err != nil:
			return err
		case t.kind == tokEOF:
			return errGQLEOF
		case t.kind == tokPunct && t.text == "{":
			_, err := l.selectionSet()
			return err
		case t.kind == tokPunct && t.text == "(":
			if err := l.skipUntil(")"); err != nil {
				return err
			}
		}
	}
}

// directives skips @name(args) directives starting at t and returns the
// token after them.
func (l *gqlLexer) directives(t gqlToken) (gqlToken, error) {
	var err error
	for t.kind == tokPunct && t.text == "@" {
		if t, err = l.next(); err != nil {
			return t, err
		}
		if t.kind != tokName {
			return t, errors.New("want a directive name after @")
		}
		if t, err = l.next(); err != nil {
			return t, err
		}
		if t.kind == tokPunct && t.text == "(" {
			if err := l.skipUntil(")"); err != nil {
				return t, err
			}
			if t, err = l.next(); err != nil {
				return t, err
			}
		}
	}
	return t, nil
}

// selectionSet reads a selection set whose '{' was read and returns its
// first field's name (the field, not its alias; "" when the set starts
// with a fragment spread or an inline fragment).
func (l *gqlLexer) selectionSet() (string, error) {
	t, err := l.next()
	if err != nil {
		return "", err
	}
	field := ""
	switch {
	case t.kind == tokName:
		field = t.text
		n, err := l.next()
		if err != nil {
			return "", err
		}
		if n.kind == tokPunct && n.text == ":" {
			if n, err = l.next(); err != nil {
				return "", err
			}
			if n.kind != tokName {
				return "", fmt.Errorf("want a field name after alias %q", field)
			}
			field = n.text
			if n, err = l.next(); err != nil {
				return "", err
			}
		}
		if n.kind == tokPunct && n.text == "}" {
			return field, nil
		}
		if n.kind == tokPunct && (n.text == "{" || n.text == "(") {
			if err := l.skipUntil(map[string]string{"{": "}", "(": ")"}[n.text]); err != nil {
				return "", err
			}
		}
	case t.kind == tokPunct && t.text == "}":
		return "", errors.New("empty selection set")
	}
	return field, l.skipUntil("}")
}

// skipUntil skips tokens until the closer of the bracket already opened,
// counting nested brackets of every kind.
func (l *gqlLexer) skipUntil(closer string) error {
	stack := []string{closer}
	pairs := map[string]string{"{": "}", "(": ")", "[": "]"}
	for len(stack) > 0 {
		t, err := l.next()
		switch {
		case err != nil:
			return err
		case t.kind == tokEOF:
			return errGQLEOF
		case t.kind != tokPunct:
		case pairs[t.text] != "":
			stack = append(stack, pairs[t.text])
		case t.text == "}" || t.text == ")" || t.text == "]":
			if t.text != stack[len(stack)-1] {
				return fmt.Errorf("unbalanced %q at offset %d", t.text, l.off-1)
			}
			stack = stack[:len(stack)-1]
		}
	}
	return nil
}
