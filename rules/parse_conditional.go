package rules

import "strings"

// This file parses a route's conditional: the header that makes the
// provider refuse a second effect.

// conditional reads conditional: {header, value}.
func (d *decoder) conditional(e entry) *Conditional {
	fs, ok := d.mapping(e.val, "conditional", "header", "value")
	if !ok {
		return nil
	}
	c := &Conditional{}
	h, hasH := fs["header"]
	v, hasV := fs["value"]
	if !hasH || !hasV {
		d.errorf(e.node, "conditional: want header and value (such as {header: If-None-Match, value: \"*\"})")
		return nil
	}
	c.Header = d.headerName(h, "conditional.header")
	if strings.HasPrefix(strings.ToLower(c.Header), "toolguard-") {
		d.errorf(h.val, "conditional.header: %q is toolguard's own header", c.Header)
	}
	if c.Value, ok = d.str(v.val, "conditional.value"); ok && (c.Value == "" || strings.ContainsAny(c.Value, "\r\n")) {
		d.errorf(v.val, "conditional.value: want a non-empty one-line value")
	}
	return c
}
