package rules

import "strings"

// This file parses a route's effect: and the reason: an effect: none
// route must give.

func (d *decoder) effect(r *Route, e entry) {
	s, ok := d.str(e.val, "effect")
	if !ok {
		return
	}
	eff, err := ParseEffect(s)
	if err != nil {
		d.errorf(e.val, "effect: %v", err)
		return
	}
	r.Effect = eff
}

// reason reads the reason of an effect: none route.
func (d *decoder) reason(r *Route, e entry) {
	s, ok := d.str(e.val, "reason")
	if !ok {
		return
	}
	if strings.TrimSpace(s) == "" {
		d.errorf(e.val, "reason: empty (say why the route needs no guard)")
		return
	}
	r.Reason = s
}

// unguardedFields are the route fields that have no use on a route that
// passes through unguarded.
var unguardedFields = []string{
	"key", "native_idempotency", "operation_id", "lookup", "verify",
	"approval", "redact", "inject", "conditional", "budget",
}

// checkNone checks the pairing of effect: none and reason, and that an
// unguarded route carries no guard settings.
func (d *decoder) checkNone(r *Route, fs map[string]entry) {
	re, hasReason := fs["reason"]
	switch {
	case r.Effect == EffectNone && !hasReason:
		d.errorf(fs["effect"].val, "effect: none passes the route through unguarded and needs reason: (why the call has no side effect)")
	case r.Effect != EffectNone && hasReason && r.Effect != 0:
		d.errorf(re.node, "reason: only an effect: none route takes a reason (this route is %s)", r.Effect)
	}
	if r.Effect != EffectNone {
		return
	}
	for _, f := range unguardedFields {
		if e, ok := fs[f]; ok {
			d.errorf(e.node, "%s: a route with effect: %s passes through unguarded, so %s has no use", f, r.Effect, f)
		}
	}
}
