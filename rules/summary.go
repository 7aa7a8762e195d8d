package rules

import (
	"bytes"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// KeyField is one entry of an intent's key summary: what an operator is
// shown of the request before approving or resolving it.
type KeyField struct {
	// Field is a key field's path, or a top-level member name of a body
	// keyed as a whole, or SummaryOmitted.
	Field string
	// Value is the field's canonical JSON text with redacted values shown
	// as "[redacted]", at most SummaryValueMax bytes (cut ones end in "…");
	// a file part is `file "NAME" sha256:PREFIX…`. It is empty for a body
	// keyed as a whole: only its member names are kept, never values.
	Value string
}

// Limits of a key summary.
const (
	// SummaryValueMax is the largest Value kept, in bytes.
	SummaryValueMax = 64
	// SummaryMax caps the summary: fields past it are left out and a last
	// entry named SummaryOmitted says so.
	SummaryMax = 1024
	// SummaryOmitted names the entry that stands for left-out fields.
	SummaryOmitted = "…"
)

// summarize returns the key summary of route r: the values of its key
// fields (a reference first), read from red (the canonical body with the
// route's redact paths already replaced), or the top-level member names of
// a body keyed whole.
func summarize(r *Route, red []byte) []KeyField {
	k := &r.Key
	switch r.keyMode(red) {
	case keyFields:
		if k.Reference == nil {
			return summarizeFields(k.Fields, red)
		}
		return summarizeFields(append(slices.Clip(k.Reference), k.Fields...), red)
	case keyRequest, keyReferenceAbsent:
		return summarizeNames(red, append(slices.Clip(k.Ignore), r.API.volatile()...), true)
	}
	return summarizeNames(red, k.Ignore, false)
}

func summarizeFields(fields []string, red []byte) []KeyField {
	out := make([]KeyField, 0, len(fields))
	size := 0
	doc := bstr(red)
	for _, f := range fields {
		res := gjson.Get(doc, f)
		v := "null"
		if res.Exists() {
			v = summaryValue(res)
		}
		if size += len(f) + len(v); size > SummaryMax {
			return append(out, KeyField{Field: SummaryOmitted})
		}
		out = append(out, KeyField{Field: f, Value: v})
	}
	return out
}

// summarizeNames keeps only the names of the document's top-level members,
// in one string that the entries view, less those the key ignores whole
// (they are not part of the intent); formArrays as in stripper.
func summarizeNames(red []byte, ignore []string, formArrays bool) []KeyField {
	res := gjson.Parse(bstr(red))
	if !res.IsObject() {
		return nil
	}
	ends := make([]int, 0, 16)
	buf := make([]byte, 0, 128)
	omitted := false
	res.ForEach(func(k, _ gjson.Result) bool {
		if ignoredName(ignore, k.Str, formArrays) {
			return true
		}
		if len(buf)+len(k.Str) > SummaryMax {
			omitted = true
			return false
		}
		buf = append(buf, k.Str...) // k.Str may view the pooled buffer: copied
		ends = append(ends, len(buf))
		return true
	})
	all := string(buf)
	out := make([]KeyField, 0, len(ends)+1)
	start := 0
	for _, end := range ends {
		out = append(out, KeyField{Field: all[start:end]})
		start = end
	}
	if omitted {
		out = append(out, KeyField{Field: SummaryOmitted})
	}
	return out
}

// summaryValue renders one key field's value for operators.
func summaryValue(res gjson.Result) string { return summaryValueMax(res, SummaryValueMax) }

// summaryValueMax renders one value for operators in at most max bytes.
func summaryValueMax(res gjson.Result, max int) string {
	if res.IsObject() {
		sum, name := res.Get("content_sha256"), res.Get("filename")
		if sum.Type == gjson.String && name.Type == gjson.String && res.Get("size").Exists() {
			return truncate(`file `+string(appendString(nil, name.Str)), max-22) +
				" sha256:" + sum.Str[:min(12, len(sum.Str))]
		}
	}
	raw := res.Raw // a view of the pooled canonical body: copy what is kept
	if strings.Contains(raw, `"redacted:`) {
		raw = string(maskRedacted([]byte(raw)))
	}
	return strings.Clone(truncate(raw, max))
}

// maskRedacted replaces every "redacted:HMAC" string with "[redacted]":
// the HMAC tells intents apart in the key, but operators need not see it.
func maskRedacted(v []byte) []byte {
	const mark = `"redacted:`
	if !bytes.Contains(v, []byte(mark)) {
		return v
	}
	out := make([]byte, 0, len(v))
	for {
		i := bytes.Index(v, []byte(mark))
		if i < 0 {
			return append(out, v...)
		}
		end := i + len(mark) + 64
		if end >= len(v) || v[end] != '"' || !isLowerHex(bstr(v[i+len(mark):end])) {
			out = append(out, v[:i+1]...)
			v = v[i+1:]
			continue
		}
		out = append(out, v[:i]...)
		out = append(out, `"[redacted]"`...)
		v = v[end+1:]
	}
}

// truncate cuts s to at most max bytes on a rune boundary, marking a cut
// with "…".
func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// ignoredName reports whether one of the paths (in the syntax of
// key.ignore) names the top-level member name whole.
func ignoredName(paths []string, name string, formArrays bool) bool {
	for _, p := range paths {
		comp, _, more := nextComponent(p)
		if !more && (componentIs(comp, sbytes(name)) || formArrays && formArrayMember(comp, sbytes(name))) {
			return true
		}
	}
	return false
}
