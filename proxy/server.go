package proxy

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/elazarl/goproxy"
	"golang.org/x/sync/semaphore"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/rules"
	"github.com/toolguard/toolguard/verifiers"
)

// Journal is the durable store the pipeline writes through. Implementations
// must make Apply durable before returning (see journal.Bolt).
type Journal interface {
	// Apply runs m exactly once against the key's current record and
	// commits the resulting change durably.
	Apply(ctx context.Context, key string, m journal.Mutation) (journal.Step, error)
	// Get returns the key's record or an error wrapping journal.ErrNotFound.
	Get(key string) (journal.Step, error)
	// Epoch identifies this process incarnation.
	Epoch() uint64
}

var _ Journal = (*journal.Bolt)(nil)

// Unmatched is the policy for calls that no route matches.
type Unmatched string

const (
	UnmatchedPassthrough Unmatched = "passthrough"
	UnmatchedGuard       Unmatched = "guard"
	UnmatchedReject      Unmatched = "reject"
)

// Options configure a Server. Zero values take the documented defaults.
type Options struct {
	Rules   *rules.Set
	Journal Journal
	// Secret keys the credential HMAC in idempotency keys.
	Secret []byte
	// CA signs leaf certificates for intercepted hosts.
	CA *CA
	// Transport sends upstream calls; nil means NewTransport's default.
	Transport http.RoundTripper
	Unmatched Unmatched
	// MaxBody bounds a guarded request body (default 8 MiB).
	MaxBody int64
	// BodyBuffer bounds the bytes of guarded request bodies held in memory
	// at once (default 4 MiB); see bodies.go.
	BodyBuffer int64
	// MaxStoredResponse bounds a stored response body (default 1 MiB).
	MaxStoredResponse int64
	// InFlightWait bounds how long a duplicate waits (default 30s).
	InFlightWait time.Duration
	// UpstreamTimeout bounds a guarded upstream call (default 30s).
	UpstreamTimeout time.Duration
	// VerifyMaxInterval caps the wait between verification probes
	// (default 30s).
	VerifyMaxInterval time.Duration
	// OnVersionChange is the policy for a prompt or policy version change
	// in the middle of a workflow (default stop).
	OnVersionChange VersionPolicy
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
	// SelfAddrs are toolguard's own listen addresses; requests aimed at
	// them through the proxy are refused.
	SelfAddrs []string
	// MaxHeaderBytes bounds a request's header block (default 1 MiB). The
	// HTTP server enforces it on plain requests; intercepted requests are
	// read by goproxy without a limit, so the proxy checks it for both.
	MaxHeaderBytes int
	// MaxInFlight bounds the guarded calls handled at once, duplicates
	// waiting included (default 1024).
	MaxInFlight int
	// Retention is how long a finished step is kept (and so how long its
	// key answers duplicates); zero keeps steps forever.
	Retention time.Duration
	// Metrics records Prometheus metrics; nil records none.
	Metrics *Metrics
	// Logger receives one decision line per guarded call; nil discards.
	Logger *slog.Logger
	// MCPServers are served at /mcp/{name} on the proxy listener.
	MCPServers []MCPServer
	// MCPUnlisted is the policy for MCP tools no rule names (default
	// guard).
	MCPUnlisted MCPUnlisted
	// MCPTrustAnnotations lets a tool that tools/list marks readOnlyHint
	// pass where the unlisted policy would guard it.
	MCPTrustAnnotations bool
}

// Server is the guarded forward proxy.
type Server struct {
	opts     Options
	rules    *rules.Set
	journal  Journal
	deriver  *rules.Deriver
	certs    *certCache
	upstream http.RoundTripper
	goproxy  *goproxy.ProxyHttpServer
	log      *slog.Logger
	flights  *flights
	verifier *verifiers.Client
	draining atomic.Bool
	// active counts guarded calls being handled, for Drain.
	active activity
	// bodies bounds the request bodies held in memory.
	bodies *semaphore.Weighted
	// bg is cancelled by Close; background verifications run under it.
	bg      context.Context
	stopBg  context.CancelFunc
	bgWork  sync.WaitGroup
	store   lister
	metrics *Metrics
	egress  *egress
	parked  parking
	// now is the clock of leases; tests replace it.
	now func() time.Time
	// mcp holds the MCP servers of the gateway and the forward proxy.
	mcp *mcpEndpoints
	// cancelHeld, when set (tests), runs when a notifications/cancelled
	// for a guarded call is held back.
	cancelHeld func()
}

// lister is the part of the journal that background work reads.
type lister interface {
	List(f journal.Filter) ([]journal.Step, error)
}

// activity counts work in progress; idle returns a channel closed when the
// count is zero.
type activity struct {
	mu   sync.Mutex
	n    int
	zero chan struct{}
}

func (a *activity) Add(d int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n == 0 && d > 0 {
		a.zero = make(chan struct{})
	}
	a.n += d
	if a.n == 0 && a.zero != nil {
		close(a.zero)
	}
}

func (a *activity) Done() { a.Add(-1) }

// tryAdd counts one more unit of work unless max are already counted.
func (a *activity) tryAdd(max int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n >= max {
		return false
	}
	if a.n == 0 {
		a.zero = make(chan struct{})
	}
	a.n++
	return true
}

func (a *activity) idle() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n == 0 {
		c := make(chan struct{})
		close(c)
		return c
	}
	return a.zero
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
		flights: newFlights(),
		bodies:  semaphore.NewWeighted(opts.BodyBuffer),
	}
	s.verifier = &verifiers.Client{Transport: opts.Transport, MaxBody: opts.MaxStoredResponse}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.now = time.Now
	s.mcp = newMCPEndpoints(opts.MCPServers)
	s.bg, s.stopBg = context.WithCancel(context.Background())
	if l, ok := opts.Journal.(lister); ok {
		s.store = l
	}
	s.metrics = opts.Metrics
	s.egress = newEgress(opts.AllowHosts, opts.ConnectPorts, opts.SelfAddrs)
	if src, ok := opts.Journal.(StateSource); ok {
		s.metrics.watchState(s, src)
	}
	if opts.CA != nil {
		s.certs = newCertCache(opts.CA, opts.CertCacheSize)
	}
	s.upstream = opts.Transport
	if s.upstream == nil {
		t, err := NewTransport(TransportOptions{})
		if err != nil {
			return nil, err
		}
		s.upstream = t
	}
	if s.verifier.Transport == nil {
		s.verifier.Transport = s.upstream
	}
	s.goproxy = s.buildGoproxy()
	return s, nil
}

func setDefaults(o *Options) {
	if o.Unmatched == "" {
		o.Unmatched = UnmatchedPassthrough
	}
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
	if o.UpstreamTimeout <= 0 {
		o.UpstreamTimeout = 30 * time.Second
	}
	if o.VerifyMaxInterval <= 0 {
		o.VerifyMaxInterval = 30 * time.Second
	}
	if o.OnVersionChange == "" {
		o.OnVersionChange = VersionStop
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 3
	}
	if o.MaxHeaderBytes <= 0 {
		o.MaxHeaderBytes = 1 << 20
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 1024
	}
	if o.MCPUnlisted == "" {
		o.MCPUnlisted = MCPUnlistedGuard
	}
}

// Handler returns the proxy's http.Handler, to be served on the proxy
// listener.
func (s *Server) Handler() http.Handler { return s.goproxy }

// SetDraining makes the proxy refuse new guarded calls (shutdown).
func (s *Server) SetDraining(v bool) { s.draining.Store(v) }

// Drain refuses new guarded calls and waits until the calls being handled
// have recorded their outcome, or ctx ends.
func (s *Server) Drain(ctx context.Context) error {
	s.draining.Store(true)
	select {
	case <-s.active.idle():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("drain: %d calls still in flight: %w", s.flights.count(), ctx.Err())
	}
}

// Close stops background verifications, leaving them pending in the
// journal, and waits for them to return.
func (s *Server) Close() {
	s.stopBg()
	s.bgWork.Wait()
}

// buildGoproxy wires goproxy. Quirks relied on are noted at each line.
func (s *Server) buildGoproxy() *goproxy.ProxyHttpServer {
	p := goproxy.NewProxyHttpServer()
	p.Logger = discardLogger{}
	p.Verbose = false
	// goproxy's default transport skips TLS verification and honours
	// HTTP_PROXY; ours does neither.
	if t, ok := s.upstream.(*http.Transport); ok {
		p.Tr = t
	} else {
		p.Tr = &http.Transport{Proxy: nil}
	}
	// NewProxyHttpServer installs a CONNECT dialer that reads HTTPS_PROXY
	// from the environment: a sidecar would dial itself. Dial directly.
	p.ConnectDial = nil
	p.ConnectDialWithReq = func(req *http.Request, network, addr string) (net.Conn, error) {
		d := net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
		return d.DialContext(req.Context(), network, addr)
	}
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
	newProblem(ProblemRejected, "", "this is a forward proxy: send absolute-form requests (set HTTP_PROXY/HTTPS_PROXY)").write(w)
}

// handleConnect intercepts TLS for hosts that rules describe (and for every
// host when unmatched calls are guarded or rejected); other tunnels are
// passed through untouched.
func (s *Server) handleConnect(host string, ctx *goproxy.ProxyCtx) (*goproxy.ConnectAction, string) {
	named := s.rules.Intercepts(host)
	if s.egress.isSelf(host) || (!named && !s.egress.connectAllowed(host)) {
		// goproxy writes ctx.Resp to the client when it rejects a CONNECT.
		why := "toolguard does not tunnel to " + host + " (not named in rules, and not an allowed host and port)"
		if s.egress.isSelf(host) {
			why = "toolguard does not proxy requests to its own listeners"
		}
		ctx.Resp = newProblem(ProblemRejected, "", why).response(ctx.Req)
		s.metrics.reject("egress")
		return goproxy.RejectConnect, host
	}
	if s.certs == nil || (s.opts.Unmatched == UnmatchedPassthrough && !s.rules.Intercepts(host)) {
		return goproxy.OkConnect, host
	}
	// goproxy peeks the first byte after CONNECT: a TLS handshake is
	// terminated with TLSConfig, anything else (Node's undici sends CONNECT
	// for http:// URLs) is read as plain HTTP inside the tunnel.
	return &goproxy.ConnectAction{Action: goproxy.ConnectMitm, TLSConfig: s.tlsConfigFor}, host
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
			return s.certs.get(sni)
		},
	}, nil
}

// reqState is the per-request state kept in goproxy's ctx.UserData; nil
// UserData means the request passed through.
type reqState struct {
	guarded bool
	// mcp is the MCP endpoint of a passed-through message; listing the id
	// of a tools/list request, whose answer shows tool annotations.
	mcp     *mcpEndpoint
	listing json.RawMessage
}

// handleRequest routes each proxied request: guarded, passed through or
// rejected.
func (s *Server) handleRequest(req *http.Request, ctx *goproxy.ProxyCtx) (*http.Request, *http.Response) {
	host := hostPort(req.URL)
	if n := headerBytes(req); n > s.opts.MaxHeaderBytes {
		ctx.UserData = &reqState{guarded: true}
		s.metrics.request("", "", OutcomeBlocked)
		s.metrics.reject("headers_too_large")
		resp := newProblem(ProblemHeadersTooLarge, "", fmt.Sprintf("request headers are %d bytes; limits.max_header_bytes is %d", n, s.opts.MaxHeaderBytes)).response(req)
		resp.Header.Set(HeaderOutcome, OutcomeBlocked)
		return req, resp
	}
	if refused := s.refuseEgress(req, host); refused != nil {
		ctx.UserData = &reqState{guarded: true}
		return req, refused
	}
	if api := s.rules.MCPEndpoint(host, req.URL.EscapedPath()); api != nil {
		return s.handleMCPForward(req, ctx, api)
	}
	route, params := s.rules.Match(host, req.Method, req.URL.EscapedPath())
	if route == nil && isMutation(req.Method) {
		switch s.opts.Unmatched {
		case UnmatchedGuard:
			route = rules.Fallback(req.Method, host, req.URL.Path)
		case UnmatchedReject:
			ctx.UserData = &reqState{guarded: true}
			resp := newProblem(ProblemRejected, "", "no rule describes "+req.Method+" "+host+req.URL.Path+" and unmatched calls are rejected").response(req)
			resp.Header.Set(HeaderOutcome, OutcomeBlocked)
			s.metrics.request("", "", OutcomeBlocked)
			s.metrics.reject("unmatched")
			s.logRequest(req, slog.LevelInfo, OutcomeBlocked, resp.StatusCode, "unmatched call rejected")
			return req, resp
		}
	}
	if route == nil || route.Effect == rules.EffectSafe {
		stripToolguardHeaders(req.Header)
		ctx.RoundTripper = passthroughTripper{s.upstream}
		return req, nil
	}
	ctx.UserData = &reqState{guarded: true}
	return req, s.guard(req, route, params)
}

// handleResponse marks passed-through answers.
func (s *Server) handleResponse(resp *http.Response, ctx *goproxy.ProxyCtx) *http.Response {
	if st, ok := ctx.UserData.(*reqState); ok && resp != nil && st.mcp != nil {
		st.mcp.tools.observe(resp, st.listing)
		ctx.UserData = nil // passed through
	}
	if resp != nil && ctx.UserData == nil {
		resp.Header.Set(HeaderOutcome, OutcomePassthrough)
		s.metrics.passedThrough()
		s.logRequest(ctx.Req, slog.LevelDebug, OutcomePassthrough, resp.StatusCode, "no route")
	}
	return resp
}

// refuseEgress answers requests the proxy must not carry: to its own
// listeners, or to hosts outside the allowlist.
func (s *Server) refuseEgress(req *http.Request, host string) *http.Response {
	var why string
	switch {
	case s.egress.isSelf(host):
		why = "toolguard does not proxy requests to its own listeners"
	case !s.rules.Intercepts(host) && !s.egress.hostAllowed(host):
		why = "toolguard does not proxy requests to " + host + ": not named in rules, and not on upstream.allow_hosts"
	default:
		return nil
	}
	s.metrics.request("", "", OutcomeBlocked)
	s.metrics.reject("egress")
	s.logRequest(req, slog.LevelInfo, OutcomeBlocked, http.StatusForbidden, why)
	resp := newProblem(ProblemRejected, "", why).response(req)
	resp.Header.Set(HeaderOutcome, OutcomeBlocked)
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
// goproxy's plain-text 500 (or a silently closed MITM connection).
type passthroughTripper struct{ rt http.RoundTripper }

func (p passthroughTripper) RoundTrip(req *http.Request, _ *goproxy.ProxyCtx) (*http.Response, error) {
	resp, err := p.rt.RoundTrip(req)
	if err != nil {
		return newProblem(ProblemUpstreamUnreachable, "", fmt.Sprintf("passthrough to %s failed: %v", req.URL.Host, err)).response(req), nil
	}
	return resp, nil
}

type discardLogger struct{}

func (discardLogger) Printf(string, ...any) {}
