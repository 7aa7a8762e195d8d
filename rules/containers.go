package rules

import (
	"strings"

	"github.com/tidwall/gjson"
)

// appendContainers appends, as a JSON array, the kind ("object", "array",
// or the scalar's type where a step met one) of the value each component
// of the gjson path p is applied to, starting with root. A '#' that
// applies the rest of the path to every element of an array is followed by
// one nested array per element that the rest selects from, in order:
// items.#.sku over [{"sku":1}] gives ["object","array",[["object"]]].
//
// The walk covers the path's leading simple components (dotted keys,
// indices, '#'); it stops at the first other one (a query, a wildcard, a
// modifier, a pipe), whose result is computed by gjson and keyed by its
// canonical value alone.
func appendContainers(dst []byte, root gjson.Result, p string) []byte {
	dst = append(dst, '[')
	dst = walkContainers(dst, root, p, false)
	return append(dst, ']')
}

// walkContainers appends the kinds of p's walk from res, each preceded by
// a comma unless it is the first and sep is false.
func walkContainers(dst []byte, res gjson.Result, p string, sep bool) []byte {
	for rest, more := p, true; more; {
		var comp string
		comp, rest, more = nextComponent(rest)
		if !simpleComponent(comp) {
			return dst
		}
		if sep {
			dst = append(dst, ',')
		}
		sep = true
		dst = append(dst, '"')
		dst = append(dst, kindOf(res)...)
		dst = append(dst, '"')
		if comp == "#" && res.IsArray() {
			if more {
				dst = appendElementContainers(dst, res, rest)
			}
			return dst
		}
		if res = res.Get(comp); !res.Exists() {
			return dst
		}
	}
	return dst
}

// appendElementContainers appends ,[...] with the walk of rest from each
// element of the array res that rest selects something from.
func appendElementContainers(dst []byte, res gjson.Result, rest string) []byte {
	dst = append(dst, ",["...)
	first := true
	res.ForEach(func(_, el gjson.Result) bool {
		if !el.Get(rest).Exists() {
			return true // gjson leaves it out of the value too
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, '[')
		dst = walkContainers(dst, el, rest, false)
		dst = append(dst, ']')
		return true
	})
	return append(dst, ']')
}

// readsIndex reports whether one of the leading simple components of the
// gjson path p (those appendContainers follows) is an index or '#': a step
// that gjson takes in an array and in an object alike.
func readsIndex(p string) bool {
	for rest, more := p, true; more; {
		var comp string
		comp, rest, more = nextComponent(rest)
		switch {
		case !simpleComponent(comp):
			return false
		case comp == "#" || allDigits(comp):
			return true
		}
	}
	return false
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// simpleComponent reports whether comp (still escaped) is a key, an index
// or '#': one step that appendContainers can follow, read by gjson alone
// as it is within the whole path. A component that starts a query,
// modifier, literal or multipath, and one with a pipe or a wildcard, is
// not.
func simpleComponent(comp string) bool {
	switch {
	case comp == "#":
		return true
	case comp == "" || strings.IndexByte("#@![{", comp[0]) >= 0:
		return false
	}
	for i := 0; i < len(comp); i++ {
		switch comp[i] {
		case '\\':
			i++
		case '|', '*', '?':
			return false
		}
	}
	return true
}

// kindOf names the JSON type of res.
func kindOf(res gjson.Result) string {
	switch {
	case res.IsObject():
		return "object"
	case res.IsArray():
		return "array"
	}
	switch res.Type {
	case gjson.String:
		return "string"
	case gjson.Number:
		return "number"
	case gjson.True, gjson.False:
		return "boolean"
	}
	return "null"
}
