package admin

import (
	"net/http"
	"strconv"
)

// mountWorkflows adds the workflow endpoints to the admin API; the resume
// packet only with a Proxy, whose recovery table gives the next actions.
func (a *API) mountWorkflows() {
	j := a.opts.Journal
	a.mux.HandleFunc("GET /v1/workflows", a.auth(RoleAgent, func(w http.ResponseWriter, r *http.Request) {
		all, err := j.ListWorkflows(0)
		if err != nil {
			a.fail(w, err)
			return
		}
		list := all[:0]
		for _, wf := range all {
			if visible(r, wf.Scope) {
				wf.Checkpoint = nil
				list = append(list, wf)
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{"workflows": nonNilList(list)})
	}))
	a.mux.HandleFunc("GET /v1/workflows/{id}", a.auth(RoleAgent, func(w http.ResponseWriter, r *http.Request) {
		wf, err := PickWorkflow(j, r.PathValue("id"), workflowScopeParam(r))
		if err != nil {
			a.fail(w, notFoundAs(err, errNoWorkflow))
			return
		}
		w.Header().Set("ETag", strconv.Quote(strconv.FormatUint(wf.Version, 10)))
		writeJSON(w, http.StatusOK, wf)
	}))
	if a.opts.Proxy != nil {
		a.mux.HandleFunc("GET /v1/workflows/{id}/resume", a.auth(RoleAgent, func(w http.ResponseWriter, r *http.Request) {
			p, err := Resume(j, a.opts.Proxy, r.PathValue("id"), workflowScopeParam(r))
			if err != nil {
				a.fail(w, notFoundAs(err, errNoWorkflow))
				return
			}
			writeJSON(w, http.StatusOK, p)
		}))
	}
	a.mux.HandleFunc("PUT /v1/workflows/{id}/checkpoint", a.auth(RoleAgent, func(w http.ResponseWriter, r *http.Request) {
		wf, err := putCheckpoint(r, j)
		if err != nil {
			a.fail(w, notFoundAs(err, errNoWorkflow))
			return
		}
		w.Header().Set("ETag", strconv.Quote(strconv.FormatUint(wf.Version, 10)))
		writeJSON(w, http.StatusOK, wf)
	}))
}

func nonNilList[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
