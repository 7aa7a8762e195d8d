package rules

import "strings"

// CleanPath is the escaped request path as a route sees it: empty segments
// (`//`) dropped, `.` and `..` segments resolved (in any escaped spelling,
// `%2e`, `%2E%2E`), and a trailing slash dropped, as the servers behind
// most APIs (nginx's merge_slashes, Go's ServeMux redirect, frameworks'
// routers) treat them. Matching the cleaned path means a spelling the
// provider takes for a route's path is guarded as that route, never passed
// through as an unmatched call. Escaped slashes (`%2F`) stay within their
// segment.
func CleanPath(p string) string {
	if !needsClean(p) {
		return p
	}
	segs := strings.Split(p, "/")
	out := make([]string, 0, len(segs))
	for _, s := range segs {
		switch unescapePath(s) {
		case "", ".":
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		default:
			out = append(out, s)
		}
	}
	clean := "/" + strings.Join(out, "/")
	if len(out) > 0 && strings.HasSuffix(p, "/") {
		clean += "/"
	}
	return clean
}

// needsClean reports whether p has an empty or dot segment, or does not
// start with '/': the fast path leaves ordinary paths alone.
func needsClean(p string) bool {
	if p == "" || p[0] != '/' {
		return true
	}
	return strings.Contains(p, "//") || strings.Contains(p, "/.") || strings.Contains(p, "%2e") || strings.Contains(p, "%2E")
}
