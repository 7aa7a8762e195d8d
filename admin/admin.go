package admin

import (
	"crypto/subtle"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/toolguard/toolguard/journal"
)

// Options configure the admin API.
type Options struct {
	// Journal is the journal the API reads and changes; required.
	Journal Journal
	// Maintainer serves backups of the journal file; nil when the backend
	// has none (the backup endpoint then says so).
	Maintainer Maintainer
	// Proxy is the proxy that handles the calls (*proxy.Server). Nil (a
	// journal served without a proxy, as in tests) means: always ready,
	// resolutions not checked against a landing window, agents limited to
	// the unscoped steps, and no resume endpoint, whose next safe actions
	// only the proxy's recovery table knows.
	Proxy Proxy
	// Token is the operator's bearer token. Empty means no request is an
	// operator (serve generates one when none is configured), unless
	// InsecureNoAuth is set.
	Token string
	// AgentToken may read steps and workflows but never approve or resolve;
	// empty means no request is an agent.
	AgentToken string
	// InsecureNoAuth makes every request an operator, with or without a
	// token: the explicit admin.insecure_no_auth, never the default.
	InsecureNoAuth bool
	// Metrics serves GET /metrics; nil leaves it out.
	Metrics http.Handler
	// UI serves the web console under /ui/, and the icon browsers ask for
	// at /favicon.ico, without a token: they are static, and the pages
	// call this API with the token in a header. Nil leaves them out.
	UI http.Handler
	// Logger receives the errors of failed requests; nil discards.
	Logger *slog.Logger
}

// Proxy is what the admin API asks of the proxy that handles the calls:
// what only it knows. *proxy.Server provides it.
type Proxy interface {
	Recovery
	// Ready reports whether the proxy can take guarded calls (GET /readyz).
	Ready() bool
	// Settle tells until when st's last attempt may still land at the
	// provider, and the time to compare it with on the same clock; a
	// not_executed resolution inside that window needs force.
	Settle(st *journal.Step) (until, now time.Time)
	// CredentialScope is the credential scope (the caller's credential MAC,
	// journal.Step.CredentialMAC) of a caller of the api named api that
	// presents credential in header; header "" means the api's first
	// credential header. It is "" for an api without a credential. An
	// error says that the rules have no such api, or that the api takes
	// its credential in other headers: the caller's mistake.
	CredentialScope(api, header, credential string) (string, error)
}

// Recovery says what is safe to do next about a step, from the proxy's
// recovery table; the resume packet asks it for every step.
type Recovery interface {
	// NextAction describes the safe next action on st ("wait: ...",
	// "retry ...", "operator review needed: ..."); "" when nothing is left
	// to do.
	NextAction(st *journal.Step) string
}

// Role is what a bearer token may do.
type Role uint8

const (
	// RoleAgent reads steps and workflows and writes checkpoints.
	RoleAgent Role = iota + 1
	// RoleOperator may do everything, approvals and resolutions included.
	RoleOperator
)

// API is the admin API's http.Handler.
type API struct {
	opts  Options
	proxy Proxy // opts.Proxy, or noProxy
	mux   *http.ServeMux
	log   *slog.Logger
	ready atomic.Bool
}

// New builds the admin API.
func New(opts Options) *API {
	a := &API{opts: opts, proxy: opts.Proxy, mux: http.NewServeMux(), log: opts.Logger}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if a.proxy == nil {
		a.proxy = noProxy{}
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
	m.HandleFunc("GET /v1/observations", a.auth(RoleAgent, a.observations))
	m.HandleFunc("GET /v1/whoami", a.auth(RoleAgent, a.whoami))
	if opts.UI != nil {
		m.Handle("/ui/", opts.UI)
		m.Handle("GET /favicon.ico", opts.UI)
	}
	if opts.Metrics != nil {
		m.HandleFunc("GET /metrics", a.auth(RoleAgent, opts.Metrics.ServeHTTP))
	}
	a.mountMaintenance()
	a.mountWorkflows()
	return a
}

// ServeHTTP implements http.Handler.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.mux.ServeHTTP(w, r) }

// SetReady flips /readyz (false during shutdown).
func (a *API) SetReady(v bool) { a.ready.Store(v) }

func (a *API) readyz(w http.ResponseWriter, r *http.Request) {
	if !a.ready.Load() || !a.proxy.Ready() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "not ready"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// auth admits a request whose bearer token grants at least role. Tokens
// are compared in constant time.
func (a *API) auth(role Role, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		granted := a.roleOf(r)
		if granted == 0 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="toolguard"`)
			a.fail(w, errUnauthorized)
			return
		}
		if granted < role {
			a.fail(w, errForbidden)
			return
		}
		if granted == RoleAgent {
			// The agent token sees only the scope its caller presents.
			scope, err := a.presentedScope(r)
			if err != nil {
				a.fail(w, err)
				return
			}
			r = withAgentScope(r, scope)
		}
		h(w, r)
	}
}

// roleOf is what the request's bearer token grants: 0 for none. An empty
// token, sent or configured, never matches; only InsecureNoAuth grants
// RoleOperator without one.
func (a *API) roleOf(r *http.Request) Role {
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
func (a *API) whoami(w http.ResponseWriter, r *http.Request) {
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

// noProxy stands for a missing Options.Proxy (see there).
type noProxy struct{}

func (noProxy) Ready() bool                                            { return true }
func (noProxy) Settle(*journal.Step) (until, now time.Time)            { return time.Time{}, time.Time{} }
func (noProxy) CredentialScope(string, string, string) (string, error) { return "", nil }
func (noProxy) NextAction(*journal.Step) string                        { return "" }
