package rules

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// RecoveredAnswer says what to answer the agent when a lookup found the
// effect: the found object and the status the original route returns, so
// the agent sees what a first call would have shown it.
type RecoveredAnswer struct {
	// Body is a gjson path into the lookup's answer; "" answers it whole.
	Body string
	// Status is the status to answer with; zero means 200.
	Status int
}

// Rate is a budget of N requests per Per, refilled continuously.
type Rate struct {
	N   int
	Per time.Duration
}

func (r Rate) String() string {
	for _, u := range rateUnits {
		if r.Per == u.d {
			return fmt.Sprintf("%d/%s", r.N, u.name)
		}
	}
	return fmt.Sprintf("%d/%s", r.N, r.Per)
}

var rateUnits = []struct {
	name string
	d    time.Duration
}{{"s", time.Second}, {"m", time.Minute}, {"h", time.Hour}}

// ParseRate parses "10/s", "100/m" or "1000/h".
func ParseRate(s string) (Rate, error) {
	n, unit, ok := strings.Cut(s, "/")
	v, err := strconv.Atoi(n)
	if !ok || err != nil || v <= 0 {
		return Rate{}, fmt.Errorf("invalid rate %q (want N/s, N/m or N/h with N > 0)", s)
	}
	for _, u := range rateUnits {
		if unit == u.name {
			return Rate{N: v, Per: u.d}, nil
		}
	}
	return Rate{}, fmt.Errorf("invalid rate %q (want N/s, N/m or N/h with N > 0)", s)
}

// Pagination follows a paged lookup answer: while Cursor yields a value
// (and HasMore, when set, is true), the next page is the same request with
// the query parameter Param set to that value, up to Pages pages.
type Pagination struct {
	// Cursor is a gjson path into a page: Stripe Search's next_page, or
	// data.@reverse.0.id for a list with starting_after.
	Cursor string
	// Param is the query parameter that takes the cursor.
	Param string
	// HasMore is a gjson path that must be true for another page; "" means
	// the cursor alone decides.
	HasMore string
	// Pages bounds the pages read; past it the lookup is unknown.
	Pages int
}

// defaultLookupPages bounds a paged lookup without pages.
const defaultLookupPages = 5

// lookupExtras reads the optional parts of a lookup: answer, settle, rate
// and next.
func (d *decoder) lookupExtras(l *Lookup, fs map[string]entry) {
	if x, ok := fs["answer"]; ok {
		l.Answer = d.recoveredAnswer(x)
	}
	if x, ok := fs["settle"]; ok {
		l.Settle = d.duration(x, "lookup.settle")
	}
	if x, ok := fs["rate"]; ok {
		if s, ok := d.str(x.val, "lookup.rate"); ok {
			r, err := ParseRate(s)
			if err != nil {
				d.errorf(x.val, "lookup.rate: %v", err)
			} else {
				l.Rate, l.ratePos = &r, d.pos(x.val)
			}
		}
	}
	if x, ok := fs["next"]; ok {
		l.Next = d.pagination(x)
	}
}

func (d *decoder) recoveredAnswer(e entry) *RecoveredAnswer {
	fs, ok := d.mapping(e.val, "lookup.answer", "body", "status")
	if !ok {
		return nil
	}
	a := &RecoveredAnswer{}
	if x, ok := fs["body"]; ok {
		if s, ok := d.str(x.val, "lookup.answer.body"); ok {
			if err := validPath(s); err != nil {
				d.errorf(x.val, "lookup.answer.body: invalid gjson path %q: %v", s, err)
			}
			a.Body = s
		}
	}
	if x, ok := fs["status"]; ok {
		if st, ok := d.integer(x.val, "lookup.answer.status"); ok {
			if st < 200 || st > 299 {
				d.errorf(x.val, "lookup.answer.status: %d is not a success status (want 200-299: the effect was found)", st)
			}
			a.Status = st
		}
	}
	return a
}

func (d *decoder) pagination(e entry) *Pagination {
	fs, ok := d.mapping(e.val, "lookup.next", "cursor", "param", "has_more", "pages")
	if !ok {
		return nil
	}
	p := &Pagination{Pages: defaultLookupPages}
	if x, ok := d.require(e.node, "lookup.next", fs, "cursor"); ok {
		if xt := d.extractor(x, "lookup.next.cursor"); xt.Source == SourceHeader {
			d.errorf(x.val, "lookup.next.cursor: want body:<gjson path> (a page's cursor is in its body)")
		} else {
			p.Cursor = xt.Path
		}
	}
	if x, ok := d.require(e.node, "lookup.next", fs, "param"); ok {
		if s, ok := d.str(x.val, "lookup.next.param"); ok && s == "" {
			d.errorf(x.val, "lookup.next.param: empty query parameter name")
		} else {
			p.Param = s
		}
	}
	if x, ok := fs["has_more"]; ok {
		if s, ok := d.str(x.val, "lookup.next.has_more"); ok {
			if err := validPath(s); err != nil {
				d.errorf(x.val, "lookup.next.has_more: invalid gjson path %q: %v", s, err)
			}
			p.HasMore = s
		}
	}
	if x, ok := fs["pages"]; ok {
		if n, ok := d.integer(x.val, "lookup.next.pages"); ok {
			if n < 2 || n > 100 {
				d.errorf(x.val, "lookup.next.pages: %d out of range (want 2-100)", n)
			}
			p.Pages = n
		}
	}
	return p
}

// sameLookupRates refuses an api whose routes name different lookup.rate
// budgets: the budget is the api's, shared by its routes' lookups.
func (d *decoder) sameLookupRates(routes []*Route) {
	var first *Route
	for _, r := range routes {
		if r.Lookup == nil || r.Lookup.Rate == nil {
			continue
		}
		if first == nil {
			first = r
			continue
		}
		if *r.Lookup.Rate != *first.Lookup.Rate {
			d.errs.add(r.Lookup.ratePos, "lookup.rate: %s differs from route %q's %s (the budget is the api's: give every route the same rate)",
				r.Lookup.Rate, first.Name, first.Lookup.Rate)
		}
	}
}
