package config

import (
	"strconv"
	"strings"
)

// Error is a problem with the configuration: YAML that does not parse or
// names an unknown setting, an environment variable with a bad value, a token
// file that cannot be read, or a setting Validate rejects. Every error this
// package returns about the configuration itself is an *Error, so callers
// can tell a bad configuration (exit status 2) from a failure to run with
// errors.As.
//
// Error() is one line: "[File:][Line:Column: ][Field: ]Msg", e.g.
//
//	config.yaml:3:5: admin: unknown field "lisen" (did you mean "listen"?)
//	TOOLGUARD_MAX_BODY (limits.max_body): invalid size "8 M" (want e.g. 8MiB, 512KiB, 1GB or 1048576)
//	limits.max_body (TOOLGUARD_MAX_BODY): must be > 0 (got 0)
//
// A setting's Field is printed with its other name in brackets, the
// environment variable after a yaml path and the reverse.
type Error struct {
	File   string // config file; "" when the problem is not in a file
	Line   int    // 1-based position in the YAML; 0 when unknown
	Column int
	Field  string // yaml path ("limits.max_body"), environment variable ("TOOLGUARD_MAX_BODY") or flag ("--log-level"); "" for the whole document
	Value  string // the offending value as written; "" when there is none
	Msg    string // what is wrong, one line, without Field or position
	Err    error  // underlying error, if any
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(":")
	}
	if e.Line > 0 {
		b.WriteString(strconv.Itoa(e.Line) + ":" + strconv.Itoa(e.Column) + ":")
	}
	if b.Len() > 0 {
		b.WriteString(" ")
	}
	if e.Field != "" {
		b.WriteString(fieldLabel(e.Field) + ": ")
	}
	b.WriteString(oneLine(e.Msg))
	return b.String()
}

// fieldLabel names a setting both ways, so that the reader finds it
// wherever it was set: "limits.max_body (TOOLGUARD_MAX_BODY)" for a yaml
// path, "TOOLGUARD_MAX_BODY (limits.max_body)" for an environment variable.
// A section or an unknown name is returned as it is.
func fieldLabel(field string) string {
	for _, s := range settings() {
		switch field {
		case s.path:
			return s.path + " (" + s.env + ")"
		case s.env:
			return s.env + " (" + s.path + ")"
		}
	}
	for _, s := range itemSettings() {
		if i, ok := s.pathIndex(field); ok {
			return field + " (" + s.env(i) + ")"
		}
		if i, ok := s.envIndex(field); ok {
			return field + " (" + s.path(i) + ")"
		}
	}
	return field
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// oneLine keeps an error message on one line whatever a library put in it.
func oneLine(s string) string {
	return newlines.Replace(strings.TrimSpace(s))
}

var newlines = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ")
