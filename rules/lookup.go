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
