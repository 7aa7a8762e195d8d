package rules

// This file exports the syntax of rule-file values for tools that write
// rule files (package rules/openapi): each function checks a value the
// way the parser does, so that what a tool writes loads.

// ValidAPIName reports whether name can be a file's api: lowercase
// letters, digits, _ and -.
func ValidAPIName(name string) bool { return lowerName(name) }

// ValidRouteName reports whether name can name a route or a tool:
// letters, digits, _, . and -.
func ValidRouteName(name string) bool { return validRouteName(name) }

// ValidHost says why h cannot be an entry of hosts (host, host:port,
// [v6]:port or *.domain with an optional port), or returns nil.
func ValidHost(h string) error {
	_, _, err := parseRuleHost(h)
	return err
}

// ValidHeaderName reports whether s can name a header: an RFC 9110 token.
func ValidHeaderName(s string) bool { return validToken(s) }

// ValidKeyPath says why p cannot be a gjson path of key.fields (and of the
// other fields that take one, such as expect.present), or returns nil.
func ValidKeyPath(p string) error { return validPath(p) }

// EscapeSimplePath escapes a literal field name as one component of a
// path of key.ignore and redact, whose syntax gives '.', '\', '#' and the
// gjson metacharacters a meaning.
func EscapeSimplePath(name string) string { return escapeSimple(name) }
