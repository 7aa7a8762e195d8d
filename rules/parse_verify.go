package rules

// This file parses a route's verify: its request, expect, within and
// mode, and the check made before the call (verify.before).

func (d *decoder) verify(r *Route, e entry) *Verify {
	fs, ok := d.mapping(e.val, "verify", "request", "expect", "within", "mode", "before")
	if !ok {
		return nil
	}
	v := &Verify{}
	if x, ok := fs["before"]; ok {
		v.Before = d.check(r, x, "verify.before")
	}
	if x, ok := d.require(e.node, "verify", fs, "request"); ok {
		v.Request = d.request(r, x, "verify.request", false)
	}
	if x, ok := d.require(e.node, "verify", fs, "expect"); ok {
		if exp := d.expectation(x, "verify.expect"); exp != nil {
			v.Expect = *exp
		}
	}
	d.verifyTiming(e, fs, v)
	return v
}

// verifyTiming reads verify's within and mode, shared by routes and MCP
// tools.
func (d *decoder) verifyTiming(e entry, fs map[string]entry, v *Verify) {
	if x, ok := d.require(e.node, "verify", fs, "within"); ok {
		v.Within = d.duration(x, "verify.within")
	}
	if x, ok := fs["mode"]; ok {
		if s, ok := d.str(x.val, "verify.mode"); ok {
			m, err := ParseVerifyMode(s)
			if err != nil {
				d.errorf(x.val, "verify.mode: %v", err)
			}
			v.Mode = m
		}
	}
}

// check reads a request and its expectation, such as verify.before. Its
// request is sent before the call, so it may not use what only the call's
// answer tells ({{operation_id}}, {{response.PATH}}).
func (d *decoder) check(r *Route, e entry, name string) *Check {
	fs, ok := d.mapping(e.val, name, "request", "expect")
	if !ok {
		return nil
	}
	c := &Check{}
	if x, ok := d.require(e.node, name, fs, "request"); ok {
		c.Request = d.request(r, x, name+".request", true)
	}
	if x, ok := d.require(e.node, name, fs, "expect"); ok {
		if exp := d.expectation(x, name+".expect"); exp != nil {
			c.Expect = *exp
		}
	}
	return c
}
