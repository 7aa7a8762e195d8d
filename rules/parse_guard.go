package rules

import "github.com/toolguard/toolguard/policy"

// This file parses a rule file's guard: section, which says how the
// guards apply to the file's API:
//
//	guard: {mode: observe}   # or enforce; overrides the global guard.mode

// guard reads guard: {mode}.
func (d *decoder) guard(api *API, e entry) {
	before := len(d.errs.List)
	fs, ok := d.mapping(e.val, "guard", "mode")
	if !ok {
		return
	}
	m, ok := fs["mode"]
	if !ok {
		if len(d.errs.List) == before { // not already told of a misspelt field
			d.errorf(e.val, "guard: missing field %q (want enforce or observe)", "mode")
		}
		return
	}
	s, ok := d.str(m.val, "guard.mode")
	if !ok {
		return
	}
	mode, err := policy.ParseMode(s)
	if err != nil {
		d.errorf(m.val, "guard.mode: %v", err)
		return
	}
	api.Mode = &mode
}

// GuardMode is the mode the guards of a's calls run in: the file's
// guard.mode, or global when it says none (or a is nil).
func (a *API) GuardMode(global policy.Mode) policy.Mode {
	if a == nil || a.Mode == nil {
		return global
	}
	return *a.Mode
}
