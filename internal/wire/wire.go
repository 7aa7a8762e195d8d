// Package wire builds toolguard's proxy and HTTP servers from a
// configuration. It is the one place where config settings meet the
// options of the proxy, so that the serve command and the benchmark harness
// run the same proxy.
package wire

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"

	"go.opentelemetry.io/otel/trace"

	"github.com/toolguard/toolguard/config"
	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/metrics"
	"github.com/toolguard/toolguard/proxy"
	"github.com/toolguard/toolguard/rules"
	"github.com/toolguard/toolguard/telemetry"
	"github.com/toolguard/toolguard/tlsca"
)

// Deps are what the proxy needs besides its configuration.
type Deps struct {
	Rules   *rules.Set
	Journal journal.Store // *bolt.Journal or *postgres.Journal
	// Maintainer is the journal's optional file maintenance (backups, the
	// size gauge); nil for a backend without a file.
	Maintainer journal.Maintainer
	Secret     []byte
	CA         *tlsca.CA
	Metrics    *metrics.Metrics
	Logger     *slog.Logger
	// SelfAddrs are toolguard's own listen addresses, refused as targets.
	SelfAddrs []string
	// Tracer receives the proxy's spans; nil traces nothing.
	Tracer trace.Tracer
}

// Proxy maps the configuration onto the proxy's options and builds it.
func Proxy(cfg config.Config, d Deps) (*proxy.Server, error) {
	servers, err := MCPServers(cfg, d.Rules)
	if err != nil {
		return nil, err
	}
	ports := cfg.Upstream.ConnectPorts.Ports()
	if ports == nil {
		ports = []int{} // configured empty: tunnels only to hosts rules name
	}
	deny := cfg.Egress.Deny.Prefixes()
	if deny == nil {
		deny = []netip.Prefix{} // configured empty: deny nothing
	}
	minRate := int64(cfg.Limits.BodyMinRate)
	if minRate == 0 {
		minRate = -1 // configured 0: no minimum rate
	}
	return proxy.New(proxy.Options{
		Rules: d.Rules, Journal: d.Journal, Maintainer: d.Maintainer, Secret: d.Secret, CA: d.CA,
		Transport:         proxy.TransportOptions{CAFile: cfg.Upstream.CAFile, MaxIdleConnsPerHost: cfg.Upstream.MaxIdleConnsPerHost},
		Unmatched:         cfg.Unmatched,
		Mode:              cfg.Guard.Mode,
		AllowHosts:        cfg.Upstream.AllowHosts,
		ConnectPorts:      ports,
		SelfAddrs:         d.SelfAddrs,
		EgressDeny:        deny,
		BodyReadTimeout:   cfg.Limits.BodyReadTimeout,
		BodyMinRate:       minRate,
		MaxInFlight:       cfg.Limits.MaxInFlight,
		MaxHeaderBytes:    int(cfg.Limits.MaxHeaderBytes),
		ReadHeaderTimeout: cfg.Limits.ReadHeaderTimeout,
		IdleTimeout:       cfg.Limits.IdleTimeout,
		MaxBody:           int64(cfg.Limits.MaxBody),
		BodyBuffer:        int64(cfg.Limits.BodyBuffer),
		MaxStoredResponse: int64(cfg.Limits.MaxStoredResponse),
		InFlightWait:      cfg.Limits.InFlightWait,
		UpstreamTimeout:   cfg.Upstream.Timeout,
		MaxAttempts:       cfg.Retry.MaxAttempts,
		AbandonAfter:      cfg.Recovery.AbandonAfter,
		Lease:             cfg.Recovery.Lease,
		VerifyLease:       cfg.Recovery.VerifyLease,
		VerifyMaxInterval: cfg.Verify.MaxInterval,
		OnVersionChange:   cfg.Workflows.OnVersionChange,
		Metrics:           d.Metrics,
		Retention:         cfg.Journal.Retention,
		HoldExpiry:        cfg.Journal.HoldExpiry,
		MaxOpenHolds:      cfg.Limits.MaxOpenHolds,
		NoKeySummary:      cfg.Journal.KeySummary == config.KeySummaryOff,
		Logger:            d.Logger,
		Tracer:            d.Tracer,
		MCPServers:        servers,
		MCPUnlisted:       cfg.MCP.Unlisted,

		UnmatchedCredential:   credential(cfg.UnmatchedCredential),
		MCPUnlistedCredential: credential(cfg.MCP.UnlistedCredential),

		MCPTrustAnnotations: cfg.MCP.Annotations == config.MCPAnnotationsTrust,
	})
}

// credential is a credential setting as the proxy takes it.
func credential(l config.List) proxy.Credential {
	headers, none := l.Credential()
	return proxy.Credential{Headers: headers, None: none}
}

// MCPServers pairs each configured MCP server with the MCP rule file of
// the same api name, if the rules have one.
func MCPServers(cfg config.Config, set *rules.Set) ([]proxy.MCPServer, error) {
	var out []proxy.MCPServer
	for _, sv := range cfg.MCP.ParsedServers() {
		ms := proxy.MCPServer{Name: sv.Name, URL: sv.URL}
		if set != nil {
			for _, api := range set.APIs {
				if api.Name != sv.Name {
					continue
				}
				if api.MCP == nil {
					return nil, &config.Error{Field: "mcp.servers", Value: sv.Name,
						Msg: fmt.Sprintf("server %s: the rule file %s of api %s describes routes, not MCP tools (want mcp: and tools:)", sv.Name, api.File, api.Name)}
				}
				ms.API = api
			}
		}
		out = append(out, ms)
	}
	return out, nil
}

// HTTPServer serves h with the configured limits: header size and time
// (slowloris), idle keep-alive time.
func HTTPServer(cfg config.Config, h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: cfg.Limits.ReadHeaderTimeout,
		IdleTimeout:       cfg.Limits.IdleTimeout,
		MaxHeaderBytes:    int(cfg.Limits.MaxHeaderBytes),
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
}

// Telemetry maps the telemetry settings (the OTEL_* variables already
// applied, see config.OTELEnv) onto the tracer provider's.
func Telemetry(cfg config.Config) telemetry.Settings {
	t := cfg.Telemetry
	return telemetry.Settings{Endpoint: t.Endpoint, TracesEndpoint: t.TracesEndpoint, Protocol: t.Protocol,
		ServiceName: t.ServiceName, Sampler: t.Sampler, SamplerArg: t.SamplerArg}
}
