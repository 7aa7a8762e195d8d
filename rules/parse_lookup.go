package rules

// This file parses a route's lookup: its request, found and absent, and
// answer, settle, rate and next.

func (d *decoder) lookup(r *Route, e entry) *Lookup {
	fs, ok := d.mapping(e.val, "lookup", "request", "found", "absent", "operation_id", "answer", "settle", "rate", "next")
	if !ok {
		return nil
	}
	l := &Lookup{}
	if x, ok := fs["operation_id"]; ok {
		l.OperationID = d.extractor(x, "lookup.operation_id")
	}
	if x, ok := d.require(e.node, "lookup", fs, "request"); ok {
		l.Request = d.request(r, x, "lookup.request", true)
	}
	if x, ok := fs["found"]; ok {
		l.Found = d.expectation(x, "lookup.found")
	} else {
		d.errorf(e.node, "lookup: missing field \"found\" (what an answer that found the effect looks like)")
	}
	if x, ok := fs["absent"]; ok {
		l.Absent = d.expectation(x, "lookup.absent")
	}
	if x, ok := fs["answer"]; ok {
		l.Answer = d.recoveredAnswer(x)
	}
	if x, ok := fs["settle"]; ok {
		l.Settle = d.duration(x, "lookup.settle")
	}
	if x, ok := fs["rate"]; ok {
		if s, ok := d.str(x.val, "lookup.rate"); ok {
			rate, err := ParseRate(s)
			if err != nil {
				d.errorf(x.val, "lookup.rate: %v", err)
			} else {
				l.Rate, l.ratePos = &rate, d.pos(x.val)
			}
		}
	}
	if x, ok := fs["next"]; ok {
		l.Next = d.pagination(x)
	}
	return l
}

// defaultLookupPages bounds a paged lookup without pages.
const defaultLookupPages = 5

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
