package rules

import (
	"net/url"
	"strings"
)

// keyPathValues returns the wildcard values that in's key holds. With
// in.EscapedPath, a {name...} value is read from the escaped path as
// keySegments says, so that an escaped '/' stays apart from a '/'; {name}
// values are unescaped as Match gives them (one segment cannot hold a raw
// '/', so nothing is lost). Without it, the values are in.PathValues (a
// Fallback route's fixed path).
func (r *Route) keyPathValues(in Input) map[string]string {
	if in.EscapedPath != "" && r.hasMulti() {
		if pv, ok := r.matchValues(in.EscapedPath, keySegments); ok {
			return pv
		}
	}
	if r.fixedPath != nil {
		return r.fixedPath
	}
	return in.PathValues
}

// hasMulti reports whether the route's pattern ends in a named {name...}
// wildcard.
func (r *Route) hasMulti() bool {
	for _, sg := range r.segs {
		if sg.kind == segMulti && sg.text != "" {
			return true
		}
	}
	return false
}

// segmentEscaper escapes what would make unescaped segments ambiguous once
// they are joined with '/'.
var segmentEscaper = strings.NewReplacer("%", "%25", "/", "%2F")

// keySegments is the key's form of an escaped multi-segment value: each
// segment unescaped, then its '%' and '/' escaped again (%25, %2F), joined
// with '/'. So a%2Fb (one segment) and a/b (two) differ, while a%62 and ab
// (the same segment, as ServeMux compares them) are one value; a value
// with no escaped '%' or '/' is exactly what Match gives. A segment with a
// malformed escape is kept as sent.
func keySegments(escaped string) string {
	if strings.IndexByte(escaped, '%') < 0 {
		return escaped
	}
	segs := strings.Split(escaped, "/")
	for i, sg := range segs {
		if strings.IndexByte(sg, '%') < 0 {
			continue
		}
		if u, err := url.PathUnescape(sg); err == nil {
			segs[i] = segmentEscaper.Replace(u)
		}
	}
	return strings.Join(segs, "/")
}
