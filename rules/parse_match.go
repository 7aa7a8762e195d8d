package rules

import (
	"fmt"
	"net/http"
	"strings"
)

// This file parses a route's match: and refuses patterns that overlap
// with neither more specific.

func (d *decoder) match(r *Route, e entry) {
	s, ok := d.str(e.val, "match")
	if !ok {
		return
	}
	method, path, segs, err := parseMatch(s)
	if oe, ok := err.(*offsetError); ok {
		d.errs.add(d.at(e.val, oe.off), "match: %s", oe.msg)
		return
	}
	r.Method, r.Pattern, r.segs, r.matchPos = method, path, segs, d.pos(e.val)
}

// conflicts reports routes whose patterns overlap with neither more
// specific, which ServeMux refuses (and Match could not decide).
func (d *decoder) conflicts(routes []*Route) {
	mux := http.NewServeMux()
	var added []*Route
	d.graphqlGroups(routes)
	for _, r := range routes {
		if r.segs == nil || sameEndpoint(r, routes) {
			continue
		}
		if msg := register(mux, r); msg != "" {
			d.errs.add(r.matchPos, "match: %q %s", r.Method+" "+r.Pattern, conflictWith(r, added, msg))
			continue
		}
		added = append(added, r)
	}
}

func register(mux *http.ServeMux, r *Route) (msg string) {
	defer func() {
		if p := recover(); p != nil {
			msg = fmt.Sprint(p)
		}
	}()
	mux.Handle(r.Method+" "+r.Pattern, http.NotFoundHandler())
	return ""
}

// conflictWith names the earlier route that r conflicts with.
func conflictWith(r *Route, added []*Route, msg string) string {
	for _, prev := range added {
		mux := http.NewServeMux()
		register(mux, prev)
		if m := register(mux, r); m != "" {
			if strings.Contains(m, "matches the same requests") {
				return fmt.Sprintf("matches the same requests as route %q", prev.Name)
			}
			like := ""
			if _, after, ok := strings.Cut(m, "like "); ok {
				like, _, _ = strings.Cut(after, ".\n")
				like = ", like " + like
			}
			return fmt.Sprintf("conflicts with route %q (%s): both match some paths%s, and neither is more specific",
				prev.Name, prev.Method+" "+prev.Pattern, like)
		}
	}
	first, _, _ := strings.Cut(msg, "\n")
	return "conflicts: " + first
}
