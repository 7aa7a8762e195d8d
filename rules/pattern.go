package rules

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// segKind is the kind of one path segment of a pattern.
type segKind uint8

const (
	segLiteral segKind = iota // matches its text exactly (after unescaping)
	segWild                   // {name}: any one segment
	segMulti                  // {name...} or a trailing '/': the rest of the path
)

// segment is one '/'-separated part of a path pattern. "{$}" is a literal
// empty segment: "/a/{$}" matches "/a/" only.
type segment struct {
	kind segKind
	text string // literal text, or the wildcard name ("" for a trailing '/')
}

// offsetError is a problem at a byte offset of a string value.
type offsetError struct {
	off int
	msg string
}

func (e *offsetError) Error() string { return e.msg }

// parseMatch parses "METHOD /path" in net/http ServeMux syntax, without a
// host. Its errors are *offsetError.
func parseMatch(s string) (method, path string, segs []segment, err error) {
	lead := len(s) - len(strings.TrimLeft(s, " \t"))
	method, rest, ok := strings.Cut(s[lead:], " ")
	path = strings.TrimSpace(rest)
	pathOff := lead + len(method) + 1 + len(rest) - len(strings.TrimLeft(rest, " \t"))
	switch {
	case !ok || path == "":
		return "", "", nil, &offsetError{0, fmt.Sprintf("want \"METHOD /path\" (got %q)", s)}
	case !validMethod(method):
		return "", "", nil, &offsetError{lead, fmt.Sprintf("method %q is not an uppercase token", method)}
	case path[0] != '/':
		return "", "", nil, &offsetError{pathOff, fmt.Sprintf("path %q does not start with /", path)}
	}
	if off, msg := servemuxCheck(method + " " + path); msg != "" {
		if off > len(method) {
			off += pathOff - len(method) - 1
		}
		return "", "", nil, &offsetError{off, "invalid pattern: " + msg}
	}
	if segs, err = splitPattern(path); err != nil {
		return "", "", nil, &offsetError{pathOff, err.Error()}
	}
	return method, path, segs, nil
}

func validMethod(m string) bool {
	if m == "" || m[0] < 'A' || m[0] > 'Z' {
		return false
	}
	for i := 0; i < len(m); i++ {
		b := m[i]
		if !(b >= 'A' && b <= 'Z') && !(b >= '0' && b <= '9') && b != '-' && b != '_' {
			return false
		}
	}
	return true
}

// servemuxCheck lets net/http validate the pattern's syntax; it returns
// the problem and its offset in pattern, if ServeMux says where.
func servemuxCheck(pattern string) (off int, msg string) {
	defer func() {
		if p := recover(); p != nil {
			msg = fmt.Sprint(p)
			msg = strings.TrimPrefix(msg, fmt.Sprintf("parsing %q: ", pattern))
			if rest, ok := strings.CutPrefix(msg, "at offset "); ok {
				n, after, _ := strings.Cut(rest, ": ")
				if i, err := strconv.Atoi(n); err == nil {
					off, msg = i, after
				}
			}
		}
	}()
	http.NewServeMux().Handle(pattern, http.NotFoundHandler())
	return 0, ""
}

// splitPattern splits a path pattern that ServeMux accepted.
func splitPattern(path string) ([]segment, error) {
	parts := strings.Split(path[1:], "/")
	segs := make([]segment, 0, len(parts))
	for i, p := range parts {
		switch {
		case p == "" && i == len(parts)-1:
			segs = append(segs, segment{kind: segMulti})
		case p == "{$}":
			segs = append(segs, segment{kind: segLiteral})
		case strings.HasPrefix(p, "{") && strings.HasSuffix(p, "...}"):
			segs = append(segs, segment{kind: segMulti, text: p[1 : len(p)-4]})
		case strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}"):
			segs = append(segs, segment{kind: segWild, text: p[1 : len(p)-1]})
		default:
			lit, err := url.PathUnescape(p)
			if err != nil {
				return nil, fmt.Errorf("invalid escape in path segment %q", p)
			}
			segs = append(segs, segment{kind: segLiteral, text: lit})
		}
	}
	return segs, nil
}

// wildcards lists the names of a pattern's wildcards.
func wildcards(segs []segment) []string {
	var names []string
	for _, s := range segs {
		if s.kind != segLiteral && s.text != "" {
			names = append(names, s.text)
		}
	}
	return names
}

// moreSpecificFirst orders patterns so that, of two that both match a
// path, the more specific comes first: segment by segment, a literal
// before a wildcard before a multi-segment wildcard. ServeMux rejects (and
// so do we) the overlapping patterns this order could not decide.
func moreSpecificFirst(a, b *Route) int {
	return slices.CompareFunc(a.segs, b.segs, func(x, y segment) int {
		return int(x.kind) - int(y.kind)
	})
}

// pathValue is one captured wildcard.
type pathValue struct{ name, value string }

// match matches an escaped request path against the route's pattern and
// returns the wildcard values (nil when there are none), unescaped.
func (r *Route) match(path string) (map[string]string, bool) {
	return r.matchValues(path, unescapePath)
}

// matchValues is match with multi giving the value of a {name...}
// wildcard from the escaped rest of the path.
func (r *Route) matchValues(path string, multi func(string) string) (map[string]string, bool) {
	if path == "" || path[0] != '/' {
		return nil, false
	}
	var buf [8]pathValue
	vals := buf[:0]
	rest, done := path[1:], false
	for _, sg := range r.segs {
		if done {
			return nil, false
		}
		if sg.kind == segMulti {
			vals = append(vals, pathValue{sg.text, multi(rest)})
			done = true
			break
		}
		var seg string
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			seg, rest = rest[:i], rest[i+1:]
		} else {
			seg, rest, done = rest, "", true
		}
		if sg.kind == segWild {
			vals = append(vals, pathValue{sg.text, unescapePath(seg)})
		} else if sg.text != seg && sg.text != unescapePath(seg) {
			return nil, false
		}
	}
	if !done {
		return nil, false
	}
	return valueMap(vals), true
}

func valueMap(vals []pathValue) map[string]string {
	var m map[string]string
	for _, v := range vals {
		if v.name == "" {
			continue
		}
		if m == nil {
			m = make(map[string]string, len(vals))
		}
		m[v.name] = v.value
	}
	return m
}

func unescapePath(s string) string {
	if strings.IndexByte(s, '%') < 0 {
		return s
	}
	if u, err := url.PathUnescape(s); err == nil {
		return u
	}
	return s
}
