package proxy

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/toolguard/toolguard/journal"
)

// AdminOptions configure the admin API.
type AdminOptions struct {
	Store journal.Store
	// journal.Maintainer serves backups of the journal file; nil when the backend
	// has none (the backup endpoint then says so).
	Maintainer journal.Maintainer
	// Token is the operator's bearer token. Empty means no request is an
	// operator (serve generates one when none is configured), unless
	// InsecureNoAuth is set.
	Token string
	// AgentToken may read steps and workflows but never approve or resolve;
	// empty means no request is an agent.
	AgentToken string
	// Settle tells how long a step's interrupted attempt may still land
	// (Server.Settle); a not_executed resolution inside it needs force.
	// Nil checks nothing.
	Settle Settler
	// InsecureNoAuth makes every request an operator, with or without a
	// token: the explicit admin.insecure_no_auth, never the default.
	InsecureNoAuth bool
	// AgentScope computes the credential scope an agent's request presents
	// (Server.AgentScope); the agent token reads and writes only that
	// scope. Nil limits agents to the unscoped steps.
	AgentScope ScopeFunc
	// Ready reports readiness; nil means always ready.
	Ready func() bool
	// Metrics serves GET /metrics; nil leaves it out.
	Metrics http.Handler
	// Extra mounts more handlers (metrics, workflows) on the same mux.
	Extra func(mux *http.ServeMux, auth func(role Role, h http.HandlerFunc) http.HandlerFunc)
	// UI serves the web console under /ui/, and the icon browsers ask for
	// at /favicon.ico, without a token: they are static, and the pages
	// call this API with the token in a header. Nil leaves them out.
	UI     http.Handler
	Logger *slog.Logger
}

// Role is what a bearer token may do.
type Role uint8

const (
	// RoleAgent reads steps and workflows and writes checkpoints.
	RoleAgent Role = iota + 1
	// RoleOperator may do everything, approvals and resolutions included.
	RoleOperator
)

// Admin is the admin API handler.
type Admin struct {
	opts  AdminOptions
	mux   *http.ServeMux
	log   *slog.Logger
	ready atomic.Bool
}

// NewAdmin builds the admin API.
func NewAdmin(opts AdminOptions) *Admin {
	a := &Admin{opts: opts, mux: http.NewServeMux(), log: opts.Logger}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	a.ready.Store(true)
	m := a.mux
	m.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	m.HandleFunc("GET /readyz", a.readyz)
	m.HandleFunc("GET /v1/steps", a.auth(RoleAgent, a.listSteps))
	m.HandleFunc("GET /v1/steps/{key}", a.auth(RoleAgent, a.getStep))
	m.HandleFunc("POST /v1/steps/{key}/approve", a.auth(RoleOperator, a.approve))
	m.HandleFunc("POST /v1/steps/{key}/resolve", a.auth(RoleOperator, a.resolve))
	m.HandleFunc("GET /v1/events", a.auth(RoleAgent, a.events))
	m.HandleFunc("GET /v1/whoami", a.auth(RoleAgent, a.whoami))
	if opts.UI != nil {
		m.Handle("/ui/", opts.UI)
		m.Handle("GET /favicon.ico", opts.UI)
	}
	if opts.Metrics != nil {
		m.HandleFunc("GET /metrics", a.auth(RoleAgent, opts.Metrics.ServeHTTP))
	}
	mountMaintenance(m, a.auth, a.log, opts.Store, opts.Maintainer)
	if opts.Extra != nil {
		opts.Extra(m, a.auth)
	}
	return a
}

// ServeHTTP implements http.Handler.
func (a *Admin) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.mux.ServeHTTP(w, r) }

// SetReady flips /readyz (false during shutdown).
func (a *Admin) SetReady(v bool) { a.ready.Store(v) }

func (a *Admin) readyz(w http.ResponseWriter, r *http.Request) {
	if !a.ready.Load() || (a.opts.Ready != nil && !a.opts.Ready()) {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "not ready"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// auth admits a request whose bearer token grants at least role. Tokens
// are compared in constant time.
func (a *Admin) auth(role Role, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		granted := a.roleOf(r)
		if granted == 0 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="toolguard"`)
			a.adminError(w, errUnauthorized)
			return
		}
		if granted < role {
			a.adminError(w, errForbidden)
			return
		}
		if granted == RoleAgent {
			// The agent token sees only the scope its caller presents.
			scope := ""
			if a.opts.AgentScope != nil {
				var err error
				if scope, err = a.opts.AgentScope(r); err != nil {
					a.adminError(w, err)
					return
				}
			}
			r = withAgentScope(r, scope)
		}
		h(w, r)
	}
}

// roleOf is what the request's bearer token grants: 0 for none. An empty
// token, sent or configured, never matches; only InsecureNoAuth grants
// RoleOperator without one.
func (a *Admin) roleOf(r *http.Request) Role {
	if a.opts.InsecureNoAuth {
		return RoleOperator
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	switch {
	case !ok || got == "":
		return 0
	case tokenEqual(got, a.opts.Token):
		return RoleOperator
	case tokenEqual(got, a.opts.AgentToken):
		return RoleAgent
	}
	return 0
}

// whoami tells a client (the console) what its token may do:
// {"role": "operator"} or {"role": "agent"}.
func (a *Admin) whoami(w http.ResponseWriter, r *http.Request) {
	out := map[string]string{"role": "agent"}
	if a.roleOf(r) == RoleOperator {
		out["role"] = "operator"
	} else if scope, _ := agentScope(r); scope != "" {
		out["scope"] = scope // the credential MAC its requests are limited to
	}
	writeJSON(w, http.StatusOK, out)
}

// tokenEqual compares in constant time; an empty want (a token that is
// not configured) matches nothing.
func tokenEqual(got, want string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// MaxListLimit is the most steps one GET /v1/steps answer holds; a
// larger (or no) limit gets this many and, when more match, a "next"
// cursor to ask for the rest with.
const MaxListLimit = 1000

// listSteps answers GET /v1/steps: {"steps": [...]}, with "next" (pass it
// as ?cursor=) when more steps match than the answer holds.
func (a *Admin) listSteps(w http.ResponseWriter, r *http.Request) {
	f, err := parseFilter(r)
	if err != nil {
		a.adminError(w, badRequest(err))
		return
	}
	page, offset, err := listPage(r, f.Limit)
	if err != nil {
		a.adminError(w, badRequest(err))
		return
	}
	// The journal lists from the start of an index in a stable order, so
	// a cursor is an offset into it; one more step says whether a next
	// page exists.
	f.Limit = offset + page + 1
	steps, err := a.opts.Store.List(f)
	if err != nil {
		a.adminError(w, err)
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

func (a *Admin) getStep(w http.ResponseWriter, r *http.Request) {
	st, err := FindStep(a.opts.Store, r.PathValue("key")) // or an abbreviated key, as git takes
	if err == nil && !visible(r, st.CredentialMAC) {
		err = fmt.Errorf("step %s: %w", r.PathValue("key"), errNoStep) // another caller's: as if absent
	}
	if err != nil {
		a.adminError(w, notFoundAs(err, errNoStep))
		return
	}
	writeJSON(w, http.StatusOK, ViewOf(&st))
}

func (a *Admin) events(w http.ResponseWriter, r *http.Request) {
	var after uint64
	if v := r.URL.Query().Get("after"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			a.adminError(w, badRequest(fmt.Errorf("after: want a sequence number (got %q)", v)))
			return
		}
		after = n
	}
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	evs, err := a.opts.Store.Events(after, limit)
	if err != nil {
		a.adminError(w, err)
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
func (a *Admin) visibleEvents(r *http.Request, evs []journal.Event) []journal.Event {
	if _, limited := agentScope(r); !limited {
		return evs
	}
	seen := map[string]bool{}
	out := evs[:0]
	for _, ev := range evs {
		ok, known := seen[ev.Key]
		if !known {
			st, err := a.opts.Store.Get(ev.Key)
			ok = err == nil && visible(r, st.CredentialMAC)
			seen[ev.Key] = ok
		}
		if ok {
			out = append(out, ev)
		}
	}
	return out
}

// adminError answers a failed admin request (see adminError).
func (a *Admin) adminError(w http.ResponseWriter, err error) { adminError(w, a.log, err) }

// notFoundAs turns the journal's "not found" into what the caller named
// (errNoStep, errNoWorkflow); other errors are returned as they are.
func notFoundAs(err, what error) error {
	if errors.Is(err, journal.ErrNotFound) {
		return what
	}
	return err
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}
