package admin

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/toolguard/toolguard/journal"
)

// MaxListLimit is the most steps one GET /v1/steps answer holds; a
// larger (or no) limit gets this many and, when more match, a "next"
// cursor to ask for the rest with.
const MaxListLimit = 1000

// listSteps answers GET /v1/steps: {"steps": [...]}, with "next" (pass it
// as ?cursor=) when more steps match than the answer holds.
func (a *API) listSteps(w http.ResponseWriter, r *http.Request) {
	f, err := parseFilter(r)
	if err != nil {
		a.fail(w, badRequest(err))
		return
	}
	page, offset, err := listPage(r, f.Limit)
	if err != nil {
		a.fail(w, badRequest(err))
		return
	}
	// The journal lists from the start of an index in a stable order, so
	// a cursor is an offset into it; one more step says whether a next
	// page exists.
	f.Limit = offset + page + 1
	steps, err := a.opts.Journal.List(f)
	if err != nil {
		a.fail(w, err)
		return
	}
	steps = steps[min(offset, len(steps)):]
	out := map[string]any{}
	if len(steps) > page {
		steps = steps[:page]
		out["next"] = strconv.Itoa(offset + page)
	}
	views := make([]StepView, 0, len(steps))
	for i := range steps {
		if visible(r, steps[i].CredentialMAC) {
			views = append(views, ViewOf(&steps[i]))
		}
	}
	out["steps"] = views
	writeJSON(w, http.StatusOK, out)
}

// listPage reads a list's page size (the limit, capped at MaxListLimit)
// and its starting offset (?cursor=, from a previous answer's "next").
func listPage(r *http.Request, limit int) (page, offset int, err error) {
	page = limit
	if page <= 0 || page > MaxListLimit {
		page = MaxListLimit
	}
	if v := r.URL.Query().Get("cursor"); v != "" {
		if offset, err = strconv.Atoi(v); err != nil || offset < 0 {
			return 0, 0, fmt.Errorf("cursor: want the next value of a previous answer (got %q)", v)
		}
	}
	return page, offset, nil
}

func parseFilter(r *http.Request) (journal.Filter, error) {
	q := r.URL.Query()
	var f journal.Filter
	var err error
	if v := q.Get("status"); v != "" {
		if f.Status, err = journal.ParseStatus(v); err != nil {
			return f, err
		}
	}
	// An empty parameter filters nothing (?status=&hold= lists all);
	// hold=none selects the steps that are not held.
	switch v := q.Get("hold"); v {
	case "":
	case "none":
		f.HoldSet = true
	default:
		if f.Hold, err = journal.ParseHold(v); err != nil {
			return f, err
		}
		f.HoldSet = true
	}
	f.Workflow = q.Get("workflow")
	if v := q.Get("limit"); v != "" {
		if f.Limit, err = strconv.Atoi(v); err != nil || f.Limit < 0 {
			return f, fmt.Errorf("limit: want a positive number (got %q)", v)
		}
	}
	return f, nil
}

// getStep answers GET /v1/steps/{key}; the key may be abbreviated, as git
// takes commit ids (FindStep).
func (a *API) getStep(w http.ResponseWriter, r *http.Request) {
	st, err := FindStep(a.opts.Journal, r.PathValue("key"))
	if err == nil && !visible(r, st.CredentialMAC) {
		err = fmt.Errorf("step %s: %w", r.PathValue("key"), errNoStep) // another caller's: as if absent
	}
	if err != nil {
		a.fail(w, notFoundAs(err, errNoStep))
		return
	}
	writeJSON(w, http.StatusOK, ViewOf(&st))
}

// events answers GET /v1/events?after=SEQ: {"events": [...]}.
func (a *API) events(w http.ResponseWriter, r *http.Request) {
	var after uint64
	if v := r.URL.Query().Get("after"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			a.fail(w, badRequest(fmt.Errorf("after: want a sequence number (got %q)", v)))
			return
		}
		after = n
	}
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	evs, err := a.opts.Journal.Events(after, limit)
	if err != nil {
		a.fail(w, err)
		return
	}
	evs = a.visibleEvents(r, evs)
	if evs == nil {
		evs = []journal.Event{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"events": evs})
}

// visibleEvents keeps the events of steps r may see: an agent's, those
// of its own scope.
func (a *API) visibleEvents(r *http.Request, evs []journal.Event) []journal.Event {
	if _, limited := agentScope(r); !limited {
		return evs
	}
	seen := map[string]bool{}
	out := evs[:0]
	for _, ev := range evs {
		ok, known := seen[ev.Key]
		if !known {
			st, err := a.opts.Journal.Get(ev.Key)
			ok = err == nil && visible(r, st.CredentialMAC)
			seen[ev.Key] = ok
		}
		if ok {
			out = append(out, ev)
		}
	}
	return out
}
