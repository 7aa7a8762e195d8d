package config

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/toolguard/toolguard/policy"
)

// Validate returns the first setting, in the order of Config's fields, that
// toolguard cannot run with, as an *Error naming the yaml field and its
// value, e.g. "limits.max_body: must be > 0 (got 0)". Token values are never
// printed. Validate reads no files: a token file counts as a token.
func (c Config) Validate() error {
	checks := []error{
		checkAddr("listen", c.Listen),
		c.Admin.validate(c.Listen),
		c.Journal.validate(),
		nonEmpty("journal.path", c.Journal.Path),
		positive("journal.open_timeout", c.Journal.OpenTimeout),
		notNegative("journal.retention", c.Journal.Retention),
		notNegative("journal.hold_expiry", c.Journal.HoldExpiry),
		checkEnum("journal.check_on_start", startCheckEnum.valid(int(c.Journal.CheckOnStart)),
			c.Journal.CheckOnStart.String(), startCheckEnum),
		checkEnum("journal.key_summary", keySummaryEnum.valid(int(c.Journal.KeySummary)), c.Journal.KeySummary.String(), keySummaryEnum),
		notNegative("journal.resident_budget", c.Journal.ResidentBudget),
		nonEmpty("rules.dir", c.Rules.Dir),
		nonEmpty("ca.dir", c.CA.Dir),
		positive("upstream.timeout", c.Upstream.Timeout),
		atLeast("upstream.max_idle_conns_per_host", c.Upstream.MaxIdleConnsPerHost, 1),
		checkHosts("upstream.allow_hosts", c.Upstream.AllowHosts),
		checkPorts("upstream.connect_ports", c.Upstream.ConnectPorts),
		checkPrefixes("egress.deny", c.Egress.Deny),
		checkEnum("unmatched", c.Unmatched.Valid(), c.Unmatched.String(), unmatchedEnum),
		checkCredential("unmatched_credential", c.UnmatchedCredential),
		checkEnum("guard.mode", c.Guard.Mode.Valid(), c.Guard.Mode.String(), modeEnum),
		positive("limits.max_body", c.Limits.MaxBody),
		positive("limits.body_buffer", c.Limits.BodyBuffer),
		positive("limits.max_stored_response", c.Limits.MaxStoredResponse),
		positive("limits.in_flight_wait", c.Limits.InFlightWait),
		positive("limits.max_header_bytes", c.Limits.MaxHeaderBytes),
		positive("limits.read_header_timeout", c.Limits.ReadHeaderTimeout),
		positive("limits.idle_timeout", c.Limits.IdleTimeout),
		atLeast("limits.max_in_flight", c.Limits.MaxInFlight, 1),
		atLeast("limits.max_connections", c.Limits.MaxConnections, 1),
		atLeast("limits.max_open_holds", c.Limits.MaxOpenHolds, 0),
		positive("limits.body_read_timeout", c.Limits.BodyReadTimeout),
		notNegative("limits.body_min_rate", c.Limits.BodyMinRate),
		atLeast("retry.max_attempts", c.Retry.MaxAttempts, 1),
		positive("recovery.abandon_after", c.Recovery.AbandonAfter),
		atLeastDuration("recovery.lease", c.Recovery.Lease, 100*time.Millisecond),
		notNegative("recovery.verify_lease", c.Recovery.VerifyLease),
		positive("verify.max_interval", c.Verify.MaxInterval),
		checkEnum("workflows.on_version_change", c.Workflows.OnVersionChange.Valid(),
			c.Workflows.OnVersionChange.String(), versionEnum),
		checkEnum("log.level", c.Log.Level.valid(), c.Log.Level.String(), levelEnum),
		checkEnum("log.format", formatEnum.valid(int(c.Log.Format)), c.Log.Format.String(), formatEnum),
		positive("shutdown.drain_timeout", c.Shutdown.DrainTimeout),
		c.MCP.validate(),
		c.Notify.validate(),
		c.Telemetry.validate(),
	}
	for _, err := range checks {
		if err != nil {
			return err
		}
	}
	return nil
}

func (j Journal) validate() error {
	if err := checkEnum("journal.backend", backendEnum.valid(int(j.Backend)), j.Backend.String(), backendEnum); err != nil {
		return err
	}
	if j.Backend == BackendPostgres && j.SecretFile == "" {
		return &Error{Field: "journal.secret_file", Msg: "required when journal.backend is postgres: " +
			"every replica must key intents with the same secret"}
	}
	if j.Backend == BackendBolt && j.DSN != "" {
		return &Error{Field: "journal.dsn", Msg: "set, but journal.backend is bolt: " +
			"set journal.backend to postgres to use the database"}
	}
	return nil
}

func (a Admin) validate(proxyListen string) error {
	if err := checkAddr("admin.listen", a.Listen); err != nil {
		return err
	}
	hasToken := a.Token != "" || a.TokenFile != ""
	hasAgentToken := a.AgentToken != "" || a.AgentTokenFile != ""
	host, port, _ := net.SplitHostPort(a.Listen)
	switch {
	case a.Listen == proxyListen && port != "0":
		return invalid("admin.listen", a.Listen, "must differ from listen")
	case a.InsecureNoAuth && !isLoopback(host):
		return invalid("admin.listen", a.Listen, "admin.insecure_no_auth is allowed only when the admin API listens on loopback")
	case !hasToken && !isLoopback(host):
		return invalid("admin.listen", a.Listen, "a token is required when the admin API listens beyond loopback")
	case a.InsecureNoAuth && hasToken:
		return &Error{Field: "admin.insecure_no_auth", Msg: "set together with admin.token: remove one of them"}
	case a.InsecureNoAuth && hasAgentToken:
		return &Error{Field: "admin.agent_token", Msg: "set together with admin.insecure_no_auth, under which every request is an operator: remove one of them"}
	case a.AgentToken != "" && a.AgentToken == a.Token:
		return &Error{Field: "admin.agent_token", Msg: "must differ from admin.token"}
	}
	return nil
}

// isLoopback reports whether host names this machine only: localhost,
// 127.0.0.0/8 or ::1. "" (every interface) is not loopback.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkAddr accepts host:port with a numeric port; an empty host means every
// interface and port 0 a free port.
func checkAddr(field, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return invalid(field, addr, "must be host:port")
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || port != strconv.FormatUint(n, 10) {
		return invalid(field, addr, "must be host:port with a port number from 0 to 65535")
	}
	return nil
}

// checkHosts accepts entries of the form host, host:port or *.example.com
// (also *.example.com:port); a host is a DNS name or an IP address, an IPv6
// one in brackets when a port follows.
func checkHosts(field string, hosts List) error {
	for _, h := range hosts {
		if why := hostProblem(h); why != "" {
			return &Error{Field: field, Value: h, Msg: fmt.Sprintf("invalid host %q (%s)", h, why)}
		}
	}
	return nil
}

const wantHost = "want host, host:port or *.example.com"

// hostProblem says what is wrong with the allow_hosts entry s, or "".
func hostProblem(s string) string {
	if net.ParseIP(s) != nil { // 10.0.0.1, ::1
		return ""
	}
	if ip, ok := strings.CutPrefix(s, "["); ok && strings.HasSuffix(ip, "]") { // [::1]
		if strings.Contains(ip, ":") && net.ParseIP(strings.TrimSuffix(ip, "]")) != nil {
			return ""
		}
		return wantHost
	}
	host := s
	if strings.Contains(s, ":") && !strings.Contains(s, "/") {
		h, port, err := net.SplitHostPort(s)
		if err != nil {
			return wantHost
		}
		if !validPort(port) {
			return "want a port number from 1 to 65535"
		}
		if strings.HasPrefix(s, "[") { // [::1]:443
			if strings.Contains(h, ":") && net.ParseIP(h) != nil {
				return ""
			}
			return wantHost
		}
		host = h
	}
	if net.ParseIP(host) != nil {
		return ""
	}
	if !validHostname(strings.TrimPrefix(host, "*.")) {
		return wantHost
	}
	return ""
}

// validHostname reports whether s is a DNS name: dot-separated labels of
// 1 to 63 letters, digits, hyphens or underscores, 253 bytes at most.
func validHostname(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, r := range label {
			if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '-' || r == '_') {
				return false
			}
		}
	}
	return true
}

// checkPrefixes accepts CIDRs and single addresses.
func checkPrefixes(field string, l List) error {
	for _, s := range l {
		if _, err := parsePrefix(s); err != nil {
			return &Error{Field: field, Value: s, Msg: fmt.Sprintf(
				"invalid CIDR %q (want e.g. 169.254.169.254/32, 10.0.0.0/8 or fd00::/8)", s)}
		}
	}
	return nil
}

func checkPorts(field string, ports List) error {
	for _, p := range ports {
		if !validPort(p) {
			return &Error{Field: field, Value: p, Msg: fmt.Sprintf("invalid port %q (want a number from 1 to 65535)", p)}
		}
	}
	return nil
}

// validPort reports whether s is a port number from 1 to 65535, written
// plainly: no sign, no leading zero.
func validPort(s string) bool {
	n, err := strconv.ParseUint(s, 10, 16)
	return err == nil && n > 0 && s == strconv.FormatUint(n, 10)
}

func nonEmpty(field, value string) error {
	if value == "" {
		return invalid(field, value, "must not be empty")
	}
	return nil
}

func positive[T time.Duration | ByteSize](field string, v T) error {
	if v <= 0 {
		return invalid(field, fmt.Sprint(v), "must be > 0")
	}
	return nil
}

func notNegative[T time.Duration | ByteSize](field string, v T) error {
	if v < 0 {
		return invalid(field, fmt.Sprint(v), "must be >= 0")
	}
	return nil
}

func atLeastDuration(field string, v, least time.Duration) error {
	if v < least {
		return invalid(field, v.String(), "must be >= "+least.String())
	}
	return nil
}

func atLeast(field string, v, least int) error {
	if v < least {
		return invalid(field, strconv.Itoa(v), fmt.Sprintf("must be >= %d", least))
	}
	return nil
}

// The policies' names, for checkEnum's messages.
var (
	unmatchedEnum = enum{"policy", policy.UnmatchedNames()}
	unlistedEnum  = enum{"policy", policy.UnlistedNames()}
	versionEnum   = enum{"policy", policy.VersionChangeNames()}
	modeEnum      = enum{"mode", policy.ModeNames()}
)

func checkEnum(field string, ok bool, value string, e enum) error {
	if ok {
		return nil
	}
	return &Error{Field: field, Value: value, Msg: fmt.Sprintf("unknown %s %s (want %s)", e.what, value, e.want())}
}

// invalid is an *Error whose message ends with the value it is about.
func invalid(field, value, msg string) error {
	got := value
	if got == "" {
		got = `""`
	}
	return &Error{Field: field, Value: value, Msg: fmt.Sprintf("%s (got %s)", msg, got)}
}
