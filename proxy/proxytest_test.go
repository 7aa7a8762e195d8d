package proxy

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolguard/toolguard/admin"
	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/journal/bolt"
	"github.com/toolguard/toolguard/metrics"
	"github.com/toolguard/toolguard/rules"
	"github.com/toolguard/toolguard/tlsca"
)

// The in-process test proxy: a real Server on 127.0.0.1 with a real bbolt
// journal in t.TempDir(), its admin API, a CA, and a provider that counts
// effects, reached by a real client over HTTP or HTTPS. Crash tests, which
// need SIGKILL, stay in the e2e package.

// testUpstream is a provider on 127.0.0.1 that counts effects. Each POST
// creates one object (inv_1, inv_2, ...); a hook may hold or drop a call.
type testUpstream struct {
	*httptest.Server
	effects atomic.Int64
	// status, when set, replaces 201 on creations.
	status atomic.Int32
	hook   atomic.Pointer[func(r *http.Request) bool]
	// extra serves paths under /x/ and POST /v1/customers when set (a
	// test's own provider).
	extra atomic.Pointer[http.Handler]
	mu    sync.Mutex
	n     int
}

func newTestUpstream(t *testing.T, useTLS bool) *testUpstream {
	t.Helper()
	u := &testUpstream{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/invoices", u.create)
	mux.HandleFunc("POST /v1/emails", u.create)
	mux.HandleFunc("GET /v1/ping", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "pong") })
	extra := func(w http.ResponseWriter, r *http.Request) {
		if h := u.extra.Load(); h != nil {
			(*h).ServeHTTP(w, r)
			return
		}
		http.NotFound(w, r)
	}
	mux.HandleFunc("/x/", extra)
	mux.HandleFunc("POST /v1/customers", extra) // for the Stripe SDK, which wants /v1/ paths
	mux.HandleFunc("/", extra)                  // any other path: a test's own provider
	if useTLS {
		u.Server = httptest.NewTLSServer(mux)
	} else {
		u.Server = httptest.NewServer(mux)
	}
	t.Cleanup(u.Close)
	return u
}

// setHook runs h before each creation; h returning false drops the
// connection without an effect.
func (u *testUpstream) setHook(h func(r *http.Request) bool) { u.hook.Store(&h) }

func (u *testUpstream) create(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	if h := u.hook.Load(); h != nil && !(*h)(r) {
		panic(http.ErrAbortHandler)
	}
	u.mu.Lock()
	u.n++
	id := fmt.Sprintf("inv_%d", u.n)
	u.mu.Unlock()
	u.effects.Add(1)
	status := http.StatusCreated
	if s := u.status.Load(); s != 0 {
		status = int(s)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Set-Cookie", "session=upstream-secret")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"id":%q,"object":"invoice"}`, id)
}

// host is the provider's host:port, as rule files name it.
func (u *testUpstream) host() string {
	return strings.TrimPrefix(strings.TrimPrefix(u.URL, "https://"), "http://")
}

// harnessConfig configures startHarness; zero values are fine.
type harnessConfig struct {
	// TLS serves the provider over HTTPS; the proxy intercepts it.
	TLS bool
	// Routes are the rule file's routes (YAML list items); the rule file
	// names the provider's host, or RuleHost when set.
	Routes   string
	RuleHost string
	// Errors is the rule file's errors setting; "" leaves the default.
	Errors string
	// Credential is the rule file's credential setting; "" means
	// {header: Authorization}, "-" leaves the field out.
	Credential string
	// Top holds more top-level fields of the rule file (unlisted:,
	// native_idempotency:, volatile:), as YAML lines.
	Top string
	// Pack, when set, makes the rule file the pack rules/packs/<Pack>'s,
	// its hosts the provider's (Routes, Errors, Credential and Top are
	// not used).
	Pack string
	// Guard is the rule file's guard setting ("{mode: observe}"); ""
	// leaves the field out.
	Guard string
	// Options are the proxy's options; journal, rules, CA, transport and
	// logger are filled in.
	Options Options
	// WrapJournal, when set, wraps the journal the proxy writes through.
	WrapJournal func(journal.Store) journal.Store
	// ConnectToUpstream lets tunnels reach the provider's port, for rule
	// files that do not name it.
	ConnectToUpstream bool
}

// harness is a running in-process toolguard.
type harness struct {
	t        *testing.T
	srv      *Server
	j        *bolt.Journal
	up       *testUpstream
	admin    *admin.API
	adminURL string
	client   *http.Client
	metrics  *metrics.Metrics
	logs     *syncBuffer
	// opts and ca are the proxy's, for restart.
	opts Options
	ca   *tlsca.CA
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startHarness(t *testing.T, cfg harnessConfig) *harness {
	t.Helper()
	h := &harness{t: t, up: newTestUpstream(t, cfg.TLS), logs: &syncBuffer{}, metrics: metrics.New()}
	host := cfg.RuleHost
	if host == "" {
		host = h.up.host()
	}
	errs := ""
	if cfg.Errors != "" {
		errs = "errors: " + cfg.Errors + "\n"
	}
	if cfg.Guard != "" {
		errs += "guard: " + cfg.Guard + "\n"
	}
	cred := "credential: {header: Authorization}\n"
	switch cfg.Credential {
	case "":
	case "-":
		cred = ""
	default:
		cred = "credential: " + cfg.Credential + "\n"
	}
	file, src := "billing.yaml", []byte(fmt.Sprintf("version: v1\napi: billing\nhosts: [%q]\n%s%s%sroutes:\n%s", host, cred, errs, cfg.Top, cfg.Routes))
	if cfg.Pack != "" {
		file, src = packAt(t, cfg.Pack, host)
	}
	api, err := rules.Parse(file, src)
	if err != nil {
		t.Fatal(err)
	}
	set, err := rules.NewSet(api)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h.j, err = bolt.Open(filepath.Join(t.TempDir(), "toolguard.db"), bolt.Options{Logger: log, OnCommit: h.metrics.ObserveCommit})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if errs := h.j.Check(); len(errs) > 0 {
			t.Errorf("journal check: %v", errs)
		}
		h.j.Close()
		if t.Failed() {
			t.Logf("toolguard log:\n%s", h.logs.String())
		}
	})
	ca, err := tlsca.Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	upstreamRoots := x509.NewCertPool()
	if cfg.TLS {
		upstreamRoots.AddCert(h.up.Certificate())
	}
	opts := cfg.Options
	opts.Rules, opts.Journal, opts.CA, opts.Logger, opts.Metrics = set, h.j, ca, log, h.metrics
	opts.Secret = []byte("0123456789abcdef0123456789abcdef")
	if cfg.WrapJournal != nil {
		opts.Journal = cfg.WrapJournal(h.j)
	}
	if cfg.ConnectToUpstream {
		u, _ := url.Parse(h.up.URL)
		port, _ := strconv.Atoi(u.Port())
		opts.ConnectPorts = []int{port}
	}
	opts.Transport.RootCAs = upstreamRoots
	h.ca = ca
	h.serve(opts)
	return h
}

// restart replaces the proxy with a new one on the same journal, rules
// and CA, whose options edit changes; the old one stays up, unused.
func (h *harness) restart(edit func(*Options)) {
	h.t.Helper()
	opts := h.opts
	edit(&opts)
	h.metrics = metrics.New()
	opts.Metrics = h.metrics
	h.serve(opts)
}

// serve starts a proxy with opts, its admin API and a client.
func (h *harness) serve(opts Options) {
	t := h.t
	t.Helper()
	var err error
	h.opts = opts
	h.srv, err = New(opts)
	if err != nil {
		t.Fatal(err)
	}
	proxyHTTP := httptest.NewServer(h.srv.Handler())
	t.Cleanup(proxyHTTP.Close)
	t.Cleanup(h.srv.Close)
	h.admin = admin.New(admin.Options{Journal: h.j, Proxy: h.srv, Token: harnessToken, AgentToken: harnessAgentToken, Logger: opts.Logger,
		Metrics: h.metrics.Handler()})
	adminHTTP := httptest.NewServer(h.admin)
	t.Cleanup(adminHTTP.Close)
	h.adminURL = adminHTTP.URL
	proxyURL, _ := url.Parse(proxyHTTP.URL)
	agentRoots := x509.NewCertPool()
	agentRoots.AddCert(h.ca.Cert)
	tr := &http.Transport{Proxy: http.ProxyURL(proxyURL), TLSClientConfig: &tls.Config{RootCAs: agentRoots}}
	t.Cleanup(tr.CloseIdleConnections)
	h.client = &http.Client{Transport: credentialed{tr}}
}

// packAt reads the rule pack rules/packs/<name> with its hosts replaced by
// host.
func packAt(t *testing.T, name, host string) (string, []byte) {
	t.Helper()
	file := "../rules/packs/" + name + "/" + name + ".yaml"
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	hosts := regexp.MustCompile(`(?m)^hosts: .*$`)
	if !hosts.Match(src) {
		t.Fatalf("%s has no hosts: line", file)
	}
	return file, hosts.ReplaceAll(src, []byte(fmt.Sprintf("hosts: [%q]", host)))
}

// do sends req through the proxy and reads the whole answer.
func (h *harness) do(req *http.Request) (*http.Response, string) {
	h.t.Helper()
	resp, err := h.client.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatalf("read answer of %s %s: %v", req.Method, req.URL, err)
	}
	return resp, string(b)
}

// post sends a JSON body to the provider's path through the proxy;
// headers are name, value pairs.
func (h *harness) post(path, body string, headers ...string) (*http.Response, string) {
	h.t.Helper()
	return h.send(http.MethodPost, path, body, headers...)
}

func (h *harness) send(method, path, body string, headers ...string) (*http.Response, string) {
	h.t.Helper()
	req, err := http.NewRequest(method, h.up.URL+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return h.do(req)
}

// adminCall calls the admin API with an optional JSON body, decodes the
// answer into out when it is non-nil, and returns the status.
// harnessToken is the operator token of the harness's admin API.
const harnessToken = "operator-test-token"

// harnessAgentToken is the agent token of the harness's admin API.
const harnessAgentToken = "agent-test-token"

func (h *harness) adminCall(method, path string, body, out any) int {
	h.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			h.t.Fatal(err)
		}
		rd = strings.NewReader(string(b))
	}
	req, err := http.NewRequest(method, h.adminURL+path, rd)
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+harnessToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			h.t.Fatalf("%s %s: decode answer: %v", method, path, err)
		}
	}
	return resp.StatusCode
}

// steps lists the journal's steps through the admin API.
func (h *harness) steps() []admin.StepView {
	h.t.Helper()
	var out struct {
		Steps []admin.StepView `json:"steps"`
	}
	if code := h.adminCall("GET", "/v1/steps", nil, &out); code != http.StatusOK {
		h.t.Fatalf("GET /v1/steps: %d", code)
	}
	return out.Steps
}

// events lists the journal's events through the admin API.
func (h *harness) events() []map[string]any {
	h.t.Helper()
	var out struct {
		Events []map[string]any `json:"events"`
	}
	if code := h.adminCall("GET", "/v1/events", nil, &out); code != http.StatusOK {
		h.t.Fatalf("GET /v1/events: %d", code)
	}
	return out.Events
}

// decisionLines are the proxy's decision log lines, decoded.
func (h *harness) decisionLines() []map[string]any {
	h.t.Helper()
	var lines []map[string]any
	for _, l := range strings.Split(h.logs.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) != nil {
			continue
		}
		if m["msg"] == "guarded call" || m["msg"] == "proxied request" {
			lines = append(lines, m)
		}
	}
	return lines
}

// guardedLines returns the decision lines of guarded calls only (not of
// CONNECTs, passthrough or refusals before a route was known).
func (h *harness) guardedLines() []map[string]any {
	h.t.Helper()
	var lines []map[string]any
	for _, m := range h.decisionLines() {
		if m["msg"] == "guarded call" {
			lines = append(lines, m)
		}
	}
	return lines
}

// metric returns the value of one sample of the metrics page ("" when it
// is absent), e.g. metric(`toolguard_rejected_total{reason="draining"}`).
func (h *harness) metric(sample string) string {
	h.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, h.adminURL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+harnessToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, sample+" "); ok {
			return v
		}
	}
	return ""
}

// invoiceRoute keys invoices on the whole body minus trace_id.
const invoiceRoute = `  - name: create_invoice
    match: POST /v1/invoices
    effect: irreversible
    key:
      ignore: [trace_id]
    operation_id: body:id
`

// approvalRoute needs an operator's approval before the first send.
const approvalRoute = `  - name: create_invoice
    match: POST /v1/invoices
    effect: irreversible
    key:
      ignore: [trace_id]
    operation_id: body:id
    approval: required
`
