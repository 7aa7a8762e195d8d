package proxy

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/elazarl/goproxy"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/semaphore"

	"github.com/toolguard/toolguard/egress"
	"github.com/toolguard/toolguard/internal/activity"
	"github.com/toolguard/toolguard/internal/calltrace"
	"github.com/toolguard/toolguard/internal/eventstream"
	"github.com/toolguard/toolguard/internal/flight"
	"github.com/toolguard/toolguard/internal/headerfilter"
	"github.com/toolguard/toolguard/internal/hijack"
	"github.com/toolguard/toolguard/internal/journalhealth"
	"github.com/toolguard/toolguard/internal/lookuprate"
	"github.com/toolguard/toolguard/internal/upstream"
	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/mcp/gateway"
	"github.com/toolguard/toolguard/mcp/servers"
	"github.com/toolguard/toolguard/metrics"
	"github.com/toolguard/toolguard/observe"
	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/problem"
	"github.com/toolguard/toolguard/rules"
	"github.com/toolguard/toolguard/tlsca"
	"github.com/toolguard/toolguard/verification"
	"github.com/toolguard/toolguard/verifiers"
)

// Options configure a Server. Zero values take the documented defaults.
type Options struct {
	Rules   *rules.Set
	Journal journal.Store
	// journal.Maintainer is the journal's optional file maintenance (bbolt); nil
	// when the backend has none.
	Maintainer journal.Maintainer
	// Secret keys the credential HMAC in idempotency keys.
	Secret []byte
	// CA signs leaf certificates for intercepted hosts.
	CA *tlsca.CA
	// Transport tunes the transport of upstream calls (roots, idle
	// connections). The proxy always builds that transport itself, around
	// the egress policy's Dial, which no option replaces.
	Transport TransportOptions
	// Mode is the guard mode of every API whose rule file names none
	// (zero: enforce); see observe.go.
	Mode policy.Mode
	// Unmatched is the policy for calls no route matches on hosts no
	// rule file of routes names, and, when reject, on every host (zero:
	// passthrough). A write to a named host follows its file's unlisted:.
	Unmatched policy.Unmatched
	// UnmatchedCredential says where the callers of calls that the
	// unmatched guard policy guards carry their credential.
	UnmatchedCredential Credential
	// MaxBody bounds a guarded request body (default 8 MiB).
	MaxBody int64
	// BodyBuffer bounds the bytes of guarded request bodies held in memory
	// at once (default 4 MiB); see bodies.go.
	BodyBuffer int64
	// MaxStoredResponse bounds a stored response body (default 1 MiB).
	MaxStoredResponse int64
	// InFlightWait bounds how long a duplicate waits (default 30s).
	InFlightWait time.Duration
	// Lease is how long a claim lasts on a journal whose leases are shared
	// between replicas (default 15s); a call renews it every Lease/3 while
	// it runs. bbolt keeps leases in the process. A call is never sent once
	// its claim's lease has ended (see package internal/wirewatch).
	Lease time.Duration
	// VerifyLease is how long a pending verification's claim lasts without
	// a renewal; zero means Lease, capped at the upstream timeout.
	VerifyLease time.Duration
	// AbandonAfter is how long a started step may stay untouched, and not
	// in flight, before the background resolver settles it (default 10m;
	// see StartResolver).
	AbandonAfter time.Duration
	// UpstreamTimeout bounds a guarded upstream call (default 30s).
	UpstreamTimeout time.Duration
	// VerifyMaxInterval caps the wait between verification probes
	// (default 30s).
	VerifyMaxInterval time.Duration
	// OnVersionChange is the policy for a prompt or policy version change
	// in the middle of a workflow (zero: stop).
	OnVersionChange policy.VersionChange
	// MaxAttempts bounds re-execution of retryable failures (default 3).
	MaxAttempts int
	// CertCacheSize bounds cached leaf certificates (default 1024).
	CertCacheSize int
	// AllowHosts limits the hosts no rule names that may be reached (host,
	// host:port or *.example.com); empty allows every host.
	AllowHosts []string
	// ConnectPorts are the ports a tunnel to a host no rule names may open;
	// nil means 443 and 80, empty means none.
	ConnectPorts []int
	// SelfAddrs are toolguard's own listen addresses; connections to them
	// through the proxy are refused at dial time, whatever name the agent
	// used (an unspecified address stands for every local address).
	SelfAddrs []string
	// EgressDeny are the destinations the proxy never dials (checked at
	// dial time, after name resolution); nil means egress.DefaultDeny (the
	// cloud metadata addresses), empty means none.
	EgressDeny []netip.Prefix
	// Resolver resolves upstream names before the egress checks; nil
	// means net.DefaultResolver.
	Resolver egress.Resolver
	// BodyReadTimeout is the longest a guarded body read waits for the
	// next bytes, and the allowance before BodyMinRate applies
	// (default 10s); see bodies.go.
	BodyReadTimeout time.Duration
	// BodyMinRate is the least average rate, in bytes per second, at which
	// a guarded body must arrive once BodyReadTimeout is used up
	// (default 1024; negative: no minimum).
	BodyMinRate int64
	// MaxHeaderBytes bounds a request's header block (default 1 MiB). The
	// proxy listener's HTTP server enforces it on plain requests, the
	// tunnel's on intercepted ones (intercept.go), as the bytes arrive.
	MaxHeaderBytes int
	// ReadHeaderTimeout bounds the time to read a request's header block
	// inside an intercepted tunnel (default 10s); IdleTimeout how long a
	// tunnel may wait for its next request (default 120s). Set them as on
	// the proxy listener's http.Server.
	ReadHeaderTimeout time.Duration
	IdleTimeout       time.Duration
	// MaxInFlight bounds the guarded calls handled at once, duplicates
	// waiting included (default 1024).
	MaxInFlight int
	// NoKeySummary keeps no summary of the key fields in new steps
	// (journal.Step.KeyFields); operators then see only hashes.
	NoKeySummary bool
	// Retention is how long a finished step is kept (and so how long its
	// key answers duplicates); zero keeps steps forever.
	Retention time.Duration
	// HoldExpiry is how long a step held for approval, and never sent, is
	// kept unapproved before the sweeper removes it (a retry is then a new
	// request); zero keeps such holds until an operator acts. Holds for
	// review never expire.
	HoldExpiry time.Duration
	// MaxOpenHolds caps the held steps of one caller (credential): a new
	// intent that would be held beyond it is answered 429 too-many-holds
	// and not journaled. Zero means no cap.
	MaxOpenHolds int
	// Metrics records Prometheus metrics; nil records none.
	Metrics *metrics.Metrics
	// Logger receives one decision line per guarded call; nil discards.
	Logger *slog.Logger
	// Tracer receives a span per guarded or passed-through request, and
	// its upstream attempts, lookups and probes (see package
	// internal/calltrace); nil traces nothing, at no cost.
	Tracer trace.Tracer
	// MCPServers are served at /mcp/{name} on the proxy listener.
	MCPServers []MCPServer
	// MCPUnlisted is the policy for MCP tools no rule names; the zero value
	// guards them.
	MCPUnlisted policy.Unlisted
	// MCPUnlistedCredential says where the callers of an MCP server without
	// a rule file carry their credential.
	MCPUnlistedCredential Credential
	// MCPTrustAnnotations lets a tool that tools/list marks readOnlyHint
	// pass where the unlisted policy would guard it.
	MCPTrustAnnotations bool
}

// Server is the guarded forward proxy.
type Server struct {
	opts    Options
	rules   *rules.Set
	journal journal.Store
	deriver *rules.Deriver
	certs   *tlsca.Cache
	// upstream carries every upstream call; its connections are opened
	// by egress.Dial.
	upstream *http.Transport
	goproxy  *goproxy.ProxyHttpServer
	log      *slog.Logger
	flights  *flight.Table
	verifier *verifiers.Client
	// tools calls the MCP tools of lookups and verification probes.
	tools    *verifiers.ToolClient
	draining atomic.Bool
	// active counts guarded calls being handled, for Drain.
	active activity.Counter
	// bodies bounds the request bodies held in memory.
	bodies *semaphore.Weighted
	// bg is cancelled by Close; background verifications run under it.
	bg      context.Context
	stopBg  context.CancelFunc
	bgWork  sync.WaitGroup
	metrics *metrics.Metrics
	// trace makes the spans of Options.Tracer (nil traces nothing).
	trace  *calltrace.Tracer
	egress *egress.Policy
	// parked lends callers' credentials to background work resumed
	// without them (verifications, lookups of abandoned steps).
	parked verification.Credentials
	// verifications verify committed effects (package verification).
	verifications *verification.Verifier
	// health records journal write failures, for Ready.
	health journalhealth.Monitor
	// now is the clock of leases; tests replace it.
	now func() time.Time
	// legacyKeys: the journal holds steps keyed by the previous version's
	// canonical form (see legacyStep).
	legacyKeys bool
	// retries are the callers that came back for unfinished steps.
	retries flight.Retries
	// started is when this server was made: a journal of one process
	// (bbolt) was let go by any earlier process before then.
	started time.Time
	// lookupBudget enforces lookup.rate.
	lookupBudget lookuprate.Budget
	// mcp holds the MCP servers of the gateway and the forward proxy.
	mcp *servers.Set
	// gateway reads the messages sent to them (package mcp/gateway).
	gateway *gateway.Gateway
	// unmatched is the API of the routes the unmatched guard policy makes.
	unmatched *rules.API
	// cancelHeld, when set (tests), runs when a notifications/cancelled
	// for a guarded call is held back.
	cancelHeld func()
	// observing records the calls of observe mode and holds the
	// observations not yet journaled; Close waits for their background
	// journal writes.
	observing *observe.Recorder
}

// New builds a Server from opts.
func New(opts Options) (*Server, error) {
	if opts.Journal == nil {
		return nil, errNoJournal
	}
	if opts.Rules == nil {
		opts.Rules = &rules.Set{}
	}
	setDefaults(&opts)
	s := &Server{
		opts:    opts,
		rules:   opts.Rules,
		journal: opts.Journal,
		deriver: &rules.Deriver{Secret: opts.Secret, Lean: true},
		log:     opts.Logger,
		flights: flight.NewTable(),
		bodies:  semaphore.NewWeighted(opts.BodyBuffer),
	}
	s.egress = egress.New(egress.Config{
		AllowHosts:   opts.AllowHosts,
		ConnectPorts: opts.ConnectPorts,
		SelfAddrs:    opts.SelfAddrs,
		Deny:         opts.EgressDeny,
		Rules:        opts.Rules,
		Resolver:     opts.Resolver,
	})
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.now = time.Now
	s.started = time.Now()
	s.legacyKeys = holdsLegacyKeys(opts.Journal)
	if s.legacyKeys {
		s.log.Info("the journal holds steps keyed by the previous version: new intents are looked up under their previous key too")
	}
	if floor := opts.Lease + opts.UpstreamTimeout; opts.AbandonAfter < floor {
		// A step younger than that may still be in flight on a stalled
		// owner, or its caller may still be retrying it.
		s.log.Warn("recovery.abandon_after is shorter than recovery.lease plus upstream.timeout; using their sum",
			slog.Duration("abandon_after", opts.AbandonAfter), slog.Duration("using", floor))
		s.opts.AbandonAfter = floor
	}
	s.unmatched = opts.UnmatchedCredential.api("unmatched")
	s.mcp = servers.NewSet(opts.MCPServers, opts.MCPUnlistedCredential.api)
	s.bg, s.stopBg = context.WithCancel(context.Background())
	s.metrics = opts.Metrics
	s.trace = calltrace.New(opts.Tracer)
	s.metrics.PrecreateRoutes(opts.Rules, opts.Mode)
	s.health.Metrics, s.health.Log = opts.Metrics, s.log
	s.journal = s.health.Recording(opts.Journal)
	s.observing = observe.NewRecorder(s.journal, s.metrics, s.log)
	s.metrics.WatchState(s.flights.Count, opts.Journal, opts.Maintainer)
	if opts.CA != nil {
		s.certs = tlsca.NewCache(opts.CA, opts.CertCacheSize)
	}
	// Every upstream connection goes through the egress policy's Dial: no
	// option replaces the transport or its dialer.
	t, err := upstream.NewTransport(opts.Transport, s.egress.Dial)
	if err != nil {
		return nil, err
	}
	s.upstream = t
	s.verifier = &verifiers.Client{Transport: s.trace.Transport(s.upstream), MaxBody: opts.MaxStoredResponse}
	s.tools = &verifiers.ToolClient{Transport: s.trace.Transport(s.upstream), Timeout: opts.UpstreamTimeout,
		Observe: func(r *rules.Route, tool string, d time.Duration) {
			s.metrics.UpstreamCall(r.API.Name, r.Name+" "+tool, d)
		}}
	s.verifications = s.newVerifier()
	s.gateway = s.newGateway()
	s.goproxy = s.buildGoproxy()
	return s, nil
}

func setDefaults(o *Options) {
	if o.MaxBody <= 0 {
		o.MaxBody = 8 << 20
	}
	if o.BodyBuffer <= 0 {
		o.BodyBuffer = 4 << 20
	}
	if o.MaxStoredResponse <= 0 {
		o.MaxStoredResponse = 1 << 20
	}
	if o.InFlightWait <= 0 {
		o.InFlightWait = 30 * time.Second
	}
	if o.Lease <= 0 {
		o.Lease = 15 * time.Second
	}
	if o.AbandonAfter <= 0 {
		o.AbandonAfter = 10 * time.Minute
	}
	if o.UpstreamTimeout <= 0 {
		o.UpstreamTimeout = 30 * time.Second
	}
	if o.VerifyMaxInterval <= 0 {
		o.VerifyMaxInterval = 30 * time.Second
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 3
	}
	if o.MaxHeaderBytes <= 0 {
		o.MaxHeaderBytes = 1 << 20
	}
	if o.ReadHeaderTimeout <= 0 {
		o.ReadHeaderTimeout = 10 * time.Second
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 120 * time.Second
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 1024
	}
	if o.BodyReadTimeout <= 0 {
		o.BodyReadTimeout = 10 * time.Second
	}
	if o.BodyMinRate == 0 {
		o.BodyMinRate = 1024
	}
}

// Handler returns the proxy's http.Handler, to be served on the proxy
// listener. It hands the pipeline each request's connection controls (see
// withConn), which goproxy does not pass on.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if h, ok := w.(http.Hijacker); ok && r.Method == http.MethodConnect {
			w = hijack.Buffered{ResponseWriter: w, Hijacker: h}
		}
		s.goproxy.ServeHTTP(w, r.WithContext(withConn(r.Context(), rc)))
	})
}

// SetDraining makes the proxy refuse new guarded calls (shutdown).
func (s *Server) SetDraining(v bool) { s.draining.Store(v) }

// Drain refuses new guarded calls and waits until the calls being handled
// have recorded their outcome, or ctx ends.
func (s *Server) Drain(ctx context.Context) error {
	s.draining.Store(true)
	select {
	case <-s.active.Idle():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("drain: %d calls still in flight: %w", s.flights.Count(), ctx.Err())
	}
}

// Close stops background verifications, leaving them pending in the
// journal, and waits for them to return.
func (s *Server) Close() {
	s.stopBg()
	s.verifications.Close()
	s.bgWork.Wait()
	s.observing.Wait()
}

// buildGoproxy wires goproxy. Quirks relied on are noted at each line.
func (s *Server) buildGoproxy() *goproxy.ProxyHttpServer {
	p := goproxy.NewProxyHttpServer()
	p.Logger = discardLogger{}
	p.Verbose = false
	// goproxy's default transport skips TLS verification and honours
	// HTTP_PROXY; ours does neither.
	p.Tr = s.upstream
	// NewProxyHttpServer installs a CONNECT dialer that reads HTTPS_PROXY
	// from the environment: a sidecar would dial itself. Dial directly.
	// Tunnels are dialled with the same egress checks as requests.
	p.ConnectDial = nil
	p.ConnectDialWithReq = func(req *http.Request, network, addr string) (net.Conn, error) {
		c, err := s.egress.Dial(req.Context(), network, addr)
		if err != nil {
			return nil, &tunnelDialError{err}
		}
		s.tunnelOpened(req)
		return c, nil
	}
	p.ConnectionErrHandler = s.tunnelFailed
	// Pass the agent's Accept-Encoding through untouched (goproxy drops it
	// by default and lets the transport decompress), so passthrough bodies
	// are streamed byte for byte.
	p.KeepAcceptEncoding = true
	p.NonproxyHandler = http.HandlerFunc(s.serveNonProxy)
	p.OnRequest().HandleConnectFunc(s.handleConnect)
	p.OnRequest().DoFunc(s.handleRequest)
	p.OnResponse().DoFunc(s.handleResponse)
	return p
}

func (s *Server) serveNonProxy(w http.ResponseWriter, r *http.Request) {
	if s.serveMCP(w, r) {
		return
	}
	why := "this is a forward proxy: send absolute-form requests (set HTTP_PROXY/HTTPS_PROXY)"
	eventstream.Copy(w, s.refuse(r, refusal{problem: problem.New(problem.Rejected, "", why)}))
}

// handleConnect intercepts TLS for hosts that rules describe (and for every
// host when unmatched calls are guarded or rejected); other tunnels are
// passed through untouched.
//
// Each CONNECT gets one decision line: here when it is refused or
// intercepted, in the tunnel dialer when a tunnel is opened, and in
// tunnelFailed when its dial fails or is refused.
func (s *Server) handleConnect(host string, ctx *goproxy.ProxyCtx) (*goproxy.ConnectAction, string) {
	if isCheckHost(host) && s.certs != nil {
		// Answered by checkResponse inside the tunnel; nothing is dialed.
		return s.intercept(), host
	}
	// goproxy writes ctx.Resp to the client when it rejects a CONNECT.
	if err := s.egress.Check(egress.Tunnel, host); err != nil {
		ctx.Resp = s.refuse(ctx.Req, egressRefusal(err))
		return goproxy.RejectConnect, host
	}
	named := s.rules.Intercepts(host)
	if s.certs == nil && !named && s.opts.Unmatched == policy.UnmatchedReject {
		// Without a CA the requests inside cannot be seen, so none could
		// be refused one by one.
		why := "no rule names " + host + " and unmatched calls are rejected"
		ctx.Resp = s.refuse(ctx.Req, refusal{problem: problem.New(problem.Rejected, "", why), reason: "unmatched"})
		return goproxy.RejectConnect, host
	}
	if s.certs == nil || (s.opts.Unmatched == policy.UnmatchedPassthrough && !s.rules.Intercepts(host)) {
		return goproxy.OkConnect, host
	}
	s.logRequest(ctx.Req, slog.LevelDebug, outcomeIntercepted, http.StatusOK, "TLS intercepted: each request inside is decided on its own")
	// The requests inside are read with the listener's limits (intercept.go).
	return s.intercept(), host
}

func (s *Server) tlsConfigFor(host string, _ *goproxy.ProxyCtx) (*tls.Config, error) {
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			sni := hello.ServerName
			if sni == "" {
				sni = name
			}
			return s.certs.Get(sni)
		},
	}, nil
}

// reqState is the per-request state kept in goproxy's ctx.UserData: set
// once the request's decision line is written and its answer stamped. A
// request without one passed through.
type reqState struct {
	// decided: the request's decision line is written (guarded, refused
	// or intercepted); a passed-through request has none yet.
	decided bool
	// why says why an unguarded request passed through, for the log; ""
	// means no route matched.
	why string
	// mcp is the MCP endpoint of a passed-through message; listing the id
	// of a tools/list request, whose answer shows tool annotations.
	mcp     *servers.Server
	listing json.RawMessage
	// observe: the call's API is in observe mode, so its answer gets no
	// toolguard header (observe.go); observed is its observation, nil for
	// a call that is not observed (a read, a message that is no tool call).
	observe  bool
	observed *observation
}

// decided reports whether ctx's request has had its decision line.
func decided(ctx *goproxy.ProxyCtx) bool {
	st, ok := ctx.UserData.(*reqState)
	return ok && st.decided
}

// handleRequest routes each proxied request: guarded, passed through or
// rejected.
func (s *Server) handleRequest(req *http.Request, ctx *goproxy.ProxyCtx) (*http.Request, *http.Response) {
	host := hostPort(req.URL)
	if n := headerBytes(req); n > s.opts.MaxHeaderBytes {
		ctx.UserData = &reqState{decided: true}
		why := fmt.Sprintf("request headers are %d bytes; limits.max_header_bytes is %d", n, s.opts.MaxHeaderBytes)
		return req, s.refuse(req, refusal{problem: problem.New(problem.HeadersTooLarge, "", why), reason: "headers_too_large"})
	}
	if isCheckHost(host) {
		ctx.UserData = &reqState{decided: true}
		return req, s.checkResponse(req)
	}
	if err := s.egress.Check(egress.Request, host); err != nil {
		ctx.UserData = &reqState{decided: true}
		return req, s.refuse(req, egressRefusal(err))
	}
	if api := s.rules.MCPEndpoint(host, req.URL.EscapedPath()); api != nil {
		return s.handleMCPForward(req, ctx, api)
	}
	route, params := s.rules.Match(host, req.Method, req.URL.EscapedPath())
	var why string
	if route.IsGraphQLEndpoint() {
		var resp *http.Response
		if route, why, resp = s.selectGraphQL(req, route); resp != nil {
			ctx.UserData = &reqState{decided: true}
			return req, resp
		}
	}
	if route.Unlisted() && s.opts.Unmatched == policy.UnmatchedReject {
		route = nil // reject refuses whatever no route lists, on every host
	}
	if route == nil && why == "" && s.opts.Unmatched != policy.UnmatchedReject && isMutation(req.Method) {
		// A host a file of routes names follows the file's unlisted:
		// (Match gave its route under guard); unmatched is for the others.
		if api := s.rules.API(host); api != nil && api.MCP == nil {
			why = "no route of " + api.Name + " matched: unlisted: pass"
		}
	}
	if route == nil && why == "" {
		// guard takes only mutations; reject refuses every method, reads
		// included: a rule with effect: safe lets a read through.
		switch {
		case s.opts.Unmatched == policy.UnmatchedGuard && isMutation(req.Method):
			route = rules.FallbackOf(s.unmatched, req.Method, host, req.URL.Path)
		case s.opts.Unmatched == policy.UnmatchedReject:
			ctx.UserData = &reqState{decided: true}
			p := problem.New(problem.Rejected, "", "no rule describes "+req.Method+" "+host+req.URL.Path+" and unmatched calls are rejected")
			return req, s.refuse(req, refusal{problem: p, reason: "unmatched", why: "unmatched call rejected"})
		}
	}
	switch {
	case route != nil && route.Effect == rules.EffectNone:
		why = "effect none: " + route.Reason
	case route != nil && route.Effect == rules.EffectSafe:
		why = "effect safe"
	}
	if route == nil || !route.Effect.Guarded() {
		return s.passThrough(req, ctx, why, route != nil && s.modeOf(route.API) == policy.ModeObserve)
	}
	if s.modeOf(route.API) == policy.ModeObserve {
		return s.observe(req, ctx, route, params)
	}
	ctx.UserData = &reqState{decided: true}
	return req, s.guard(req, route, params)
}

// handleResponse marks passed-through answers; observed ones, it leaves
// as passed-through answers are, without the mark (observe.go).
func (s *Server) handleResponse(resp *http.Response, ctx *goproxy.ProxyCtx) *http.Response {
	st, _ := ctx.UserData.(*reqState)
	if st != nil && resp != nil && st.mcp != nil {
		st.mcp.Listed(resp, st.listing) // tools/list: the annotations
	}
	if resp == nil || decided(ctx) {
		return resp
	}
	headerfilter.StripToolguard(resp.Header) // the upstream's: see headerfilter.StripToolguard
	if st != nil && st.observed != nil {
		return resp // observed: nothing is added, and the line comes when it ends
	}
	if st == nil || !st.observe {
		resp.Header.Set(HeaderOutcome, OutcomePassthrough)
	}
	why := "no route"
	if st != nil && st.why != "" {
		why = st.why
	}
	s.metrics.PassedThrough()
	s.logRequest(ctx.Req, slog.LevelDebug, OutcomePassthrough, resp.StatusCode, why)
	return resp
}

// headerBytes is the size of a request's header block as sent.
func headerBytes(req *http.Request) int {
	n := len(req.Method) + len(req.RequestURI) + len(req.Host) + 16
	for k, vs := range req.Header {
		for _, v := range vs {
			n += len(k) + len(v) + 4
		}
	}
	return n
}

// logRequest writes the decision line of a request that no route guards:
// method, target host and path (never the query, headers or body).
func (s *Server) logRequest(req *http.Request, level slog.Level, outcome string, status int, why string) {
	if req == nil {
		return
	}
	s.traceRequest(req, outcome, status)
	s.log.LogAttrs(req.Context(), level, "proxied request",
		slog.String("method", req.Method),
		slog.String("host", req.URL.Host),
		slog.String("path", req.URL.Path),
		slog.String(logOutcome, outcome),
		slog.Int(logStatus, status),
		slog.String(logWhy, why),
	)
}

// hostPort is the request's target with its port made explicit, so that
// a rule naming host:443 matches a client that left the default port out.
func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	if u.Scheme == "https" {
		return u.Host + ":443"
	}
	return u.Host + ":80"
}

func isMutation(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// passthroughTripper turns transport errors into a 502 problem instead of
// goproxy's plain-text 500 (or a silently closed MITM connection), and a
// dial the egress checks refused into a 403 with its decision line.
type passthroughTripper struct{ s *Server }

func (p passthroughTripper) RoundTrip(req *http.Request, ctx *goproxy.ProxyCtx) (*http.Response, error) {
	resp, err := p.s.sendUpstream(req)
	return p.s.passedThrough(req, ctx, resp, err), nil
}

// passedThrough is the answer to a passed-through (or observed) call
// whose round trip returned resp and err.
func (s *Server) passedThrough(req *http.Request, ctx *goproxy.ProxyCtx, resp *http.Response, err error) *http.Response {
	if r := refusedByEgress(err); r != nil {
		// The same answer as a request aimed at a refused address
		// literally.
		ctx.UserData = &reqState{decided: true}
		return s.refuse(req, egressRefusal(r))
	}
	if err != nil {
		return problemResponse(req, rules.ErrorFormat{}, problem.New(problem.UpstreamUnreachable, "", fmt.Sprintf("passthrough to %s failed: %v", req.URL.Host, err)))
	}
	return resp
}

type discardLogger struct{}

func (discardLogger) Printf(string, ...any) {}

// legacyScan bounds the steps holdsLegacyKeys reads.
const legacyScan = 1000

// holdsLegacyKeys reports whether the newest steps of j include one keyed
// by the previous version's canonical form (KeyForm zero): the journal was
// written, recently, by that version.
func holdsLegacyKeys(j journal.Store) bool {
	steps, err := j.List(journal.Filter{Limit: legacyScan})
	if err != nil {
		return false
	}
	for i := range steps {
		if steps[i].KeyForm == 0 {
			return true
		}
	}
	return false
}
