package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/toolguard/toolguard/policy"
)

// EnvPrefix starts the name of every environment variable ApplyEnv reads.
const EnvPrefix = "TOOLGUARD_"

// Config is every setting of toolguard serve. It is plain data: the zero
// value is not usable, start from Default. The yaml tags name the keys of the
// config file, the env tags (after EnvPrefix) the environment variables;
// config.example.yaml describes each setting.
//
// Config holds Lists, so it is not comparable with == (use reflect.DeepEqual).
// Parse and ApplyEnv replace a List rather than change it, so copies of a
// Config may share them.
type Config struct {
	Listen    string           `yaml:"listen" env:"LISTEN"` // proxy address, host:port
	Admin     Admin            `yaml:"admin" envPrefix:"ADMIN_"`
	Journal   Journal          `yaml:"journal" envPrefix:"JOURNAL_"`
	Rules     Rules            `yaml:"rules" envPrefix:"RULES_"`
	CA        CA               `yaml:"ca" envPrefix:"CA_"`
	Upstream  Upstream         `yaml:"upstream" envPrefix:"UPSTREAM_"`
	Egress    Egress           `yaml:"egress" envPrefix:"EGRESS_"`
	Unmatched policy.Unmatched `yaml:"unmatched" env:"UNMATCHED"`
	Guard     Guard            `yaml:"guard" envPrefix:"GUARD_"`
	Limits    Limits           `yaml:"limits"` // no prefix: TOOLGUARD_MAX_BODY
	Retry     Retry            `yaml:"retry" envPrefix:"RETRY_"`
	Recovery  Recovery         `yaml:"recovery" envPrefix:"RECOVERY_"`
	Verify    Verify           `yaml:"verify" envPrefix:"VERIFY_"`
	Workflows Workflows        `yaml:"workflows"` // no prefix: TOOLGUARD_ON_VERSION_CHANGE
	Log       Log              `yaml:"log" envPrefix:"LOG_"`
	Shutdown  Shutdown         `yaml:"shutdown" envPrefix:"SHUTDOWN_"`
	MCP       MCP              `yaml:"mcp" envPrefix:"MCP_"`
	Notify    Notify           `yaml:"notify" envPrefix:"NOTIFY_"`
	Telemetry Telemetry        `yaml:"telemetry" envPrefix:"TELEMETRY_"` // OTEL_* variables win: see OTELEnv

	// UnmatchedCredential names the headers that carry the caller's
	// credential on calls the unmatched guard policy guards, the first one
	// a call carries counting; "none" lets calls without one share a
	// scope (docs/tenancy.md).
	UnmatchedCredential List `yaml:"unmatched_credential" env:"UNMATCHED_CREDENTIAL"`
}

// Admin configures the admin API. With no Token, serve generates an
// operator token on first start and keeps it in a file (see
// GeneratedTokenPath); only InsecureNoAuth opens the API to everyone.
type Admin struct {
	Listen    string `yaml:"listen" env:"LISTEN"`         // host:port
	Token     string `yaml:"token" env:"TOKEN"`           // bearer token for operators; "" = generated on first start
	TokenFile string `yaml:"token_file" env:"TOKEN_FILE"` // file holding Token, read by LoadSecrets
	// AgentToken is a lesser bearer token for agents: it may read their
	// workflows and write checkpoints, never approve or resolve steps.
	// "" = agents get no admin access.
	AgentToken     string `yaml:"agent_token" env:"AGENT_TOKEN"`
	AgentTokenFile string `yaml:"agent_token_file" env:"AGENT_TOKEN_FILE"` // file holding AgentToken, read by LoadSecrets
	// InsecureNoAuth turns authentication off: every request that reaches
	// the admin API, unauthenticated ones included, may approve and resolve.
	// Loopback only, never with a token; serve warns at every start.
	InsecureNoAuth bool `yaml:"insecure_no_auth" env:"INSECURE_NO_AUTH"`
}

// GeneratedTokenName is the file name of the operator token serve
// generates when no admin.token is configured.
const GeneratedTokenName = "admin-token"

// GeneratedTokenPath is where serve keeps the operator token it generates
// when no admin.token is configured, and where the CLI looks for it: beside
// the bbolt journal (the directory of journal.path), or, with the postgres
// backend, in ca.dir, toolguard's own writable directory (journal.secret_file
// is often a read-only mounted secret).
func (c *Config) GeneratedTokenPath() string {
	if c.Journal.Backend == BackendPostgres {
		return filepath.Join(c.CA.Dir, GeneratedTokenName)
	}
	return filepath.Join(filepath.Dir(c.Journal.Path), GeneratedTokenName)
}

// Journal configures the journal: an embedded bbolt file (the default) or
// a PostgreSQL database shared by any number of replicas.
type Journal struct {
	Backend JournalBackend `yaml:"backend" env:"BACKEND"` // bolt or postgres
	// DSN locates the PostgreSQL database (backend postgres): a libpq URL
	// or key/value string; what it leaves out comes from the PG* variables.
	// It may hold a password: it is never printed.
	DSN string `yaml:"dsn" env:"DSN"`
	// SecretFile holds the HMAC secret that keys the credential part of
	// every idempotency key; replicas sharing a journal must share it.
	// Empty means <path>.secret, created on first start (bolt only).
	SecretFile  string        `yaml:"secret_file" env:"SECRET_FILE"`
	Path        string        `yaml:"path" env:"PATH"`                 // bbolt file
	OpenTimeout time.Duration `yaml:"open_timeout" env:"OPEN_TIMEOUT"` // how long to wait for the file lock (bbolt Options.Timeout)
	Retention   time.Duration `yaml:"retention" env:"RETENTION"`       // how long finished steps are kept; 0 = forever
	// HoldExpiry is how long a step held for approval, and never sent, is
	// kept unapproved before it is removed (a retry is then a new
	// request); 0 = until an operator acts. Holds for review never expire.
	HoldExpiry time.Duration `yaml:"hold_expiry" env:"HOLD_EXPIRY"`
	// CheckOnStart says when serve checks the whole journal before it
	// serves; larger files are left to `toolguard journal check`.
	CheckOnStart StartCheck `yaml:"check_on_start" env:"CHECK_ON_START"`
	// KeySummary says whether new steps keep a short, redacted summary of
	// their key fields for the operators who approve and review them.
	KeySummary KeySummary `yaml:"key_summary" env:"KEY_SUMMARY"`
	// ResidentBudget is how much of the bbolt file's pages the process may
	// keep mapped, in its RSS, beyond what it held after its last drop of
	// them; 0 = never drop them (RSS grows to the file's size).
	ResidentBudget ByteSize `yaml:"resident_budget" env:"RESIDENT_BUDGET"`
}

// Rules says where the rule files are.
type Rules struct {
	Dir string `yaml:"dir" env:"DIR"`
}

// CA says where the proxy's certificate authority lives.
type CA struct {
	Dir string `yaml:"dir" env:"DIR"` // holds ca.pem and ca-key.pem, created on first start
}

// Upstream configures the calls toolguard makes to the real APIs.
type Upstream struct {
	CAFile string `yaml:"ca_file" env:"CA_FILE"` // PEM roots trusted besides the system's; "" = system roots only
	// Timeout bounds one upstream call; a call still unanswered after it
	// ends as outcome-unknown.
	Timeout             time.Duration `yaml:"timeout" env:"TIMEOUT"`
	MaxIdleConnsPerHost int           `yaml:"max_idle_conns_per_host" env:"MAX_IDLE_CONNS_PER_HOST"`
	// AllowHosts are the hosts unmatched (passthrough) calls and tunnels may
	// reach, each "host", "host:port" or "*.example.com"; hosts named in
	// rule files are always allowed. Empty = any host.
	AllowHosts List `yaml:"allow_hosts" env:"ALLOW_HOSTS"`
	// ConnectPorts are the ports a CONNECT tunnel may open to a host no rule
	// names (a rule host's ports are always allowed); see List.Ports.
	// Empty = only rule hosts' ports.
	ConnectPorts List `yaml:"connect_ports" env:"CONNECT_PORTS"`
}

// Egress limits where the proxy connects, whatever name the agent used:
// the check is made on the address dialled.
type Egress struct {
	// Deny are CIDRs (or single addresses) the proxy never connects to,
	// for any call: passthrough, guarded, tunnel, lookup or verification.
	// See List.Prefixes. Empty = none.
	Deny List `yaml:"deny" env:"DENY"`
}

// Guard configures how the guards apply.
type Guard struct {
	// Mode is enforce (replay, wait, hold and refuse as the rules say) or
	// observe (forward every call untouched and journal what enforcement
	// would have done). A rule file's guard: {mode} overrides it for its
	// API.
	Mode policy.Mode `yaml:"mode" env:"MODE"`
}

// Limits bounds what one request may cost.
type Limits struct {
	MaxBody           ByteSize      `yaml:"max_body" env:"MAX_BODY"`                       // largest request body on a guarded route
	MaxStoredResponse ByteSize      `yaml:"max_stored_response" env:"MAX_STORED_RESPONSE"` // largest response body kept in the journal for replay
	InFlightWait      time.Duration `yaml:"in_flight_wait" env:"IN_FLIGHT_WAIT"`           // how long a duplicate waits for the first call's outcome
	MaxHeaderBytes    ByteSize      `yaml:"max_header_bytes" env:"MAX_HEADER_BYTES"`       // http.Server.MaxHeaderBytes
	ReadHeaderTimeout time.Duration `yaml:"read_header_timeout" env:"READ_HEADER_TIMEOUT"` // http.Server.ReadHeaderTimeout
	IdleTimeout       time.Duration `yaml:"idle_timeout" env:"IDLE_TIMEOUT"`               // http.Server.IdleTimeout
	// BodyBuffer bounds the bytes of guarded request bodies held in memory
	// at once; calls beyond it wait for room, then get 503. A body longer
	// than BodyBuffer is read alone.
	BodyBuffer ByteSize `yaml:"body_buffer" env:"BODY_BUFFER"`
	// MaxInFlight bounds the guarded calls handled at once, duplicates
	// waiting included; beyond it the proxy answers 503 with Retry-After.
	MaxInFlight int `yaml:"max_in_flight" env:"MAX_IN_FLIGHT"`
	// MaxConnections bounds the client connections the proxy listener
	// accepts at once; more wait in the kernel's accept queue.
	MaxConnections int `yaml:"max_connections" env:"MAX_CONNECTIONS"`
	// MaxOpenHolds caps the held steps of one caller (credential): a new
	// intent that would be held beyond it gets 429 too-many-holds and is
	// not journaled. 0 = no cap.
	MaxOpenHolds int `yaml:"max_open_holds" env:"MAX_OPEN_HOLDS"`
	// BodyReadTimeout is the longest a guarded request body read waits for
	// the next bytes, and the allowance before BodyMinRate applies; a
	// client that exceeds either gets 408.
	BodyReadTimeout time.Duration `yaml:"body_read_timeout" env:"BODY_READ_TIMEOUT"`
	// BodyMinRate is the least average rate, per second, at which a
	// guarded request body must arrive once BodyReadTimeout is used up;
	// 0 = no minimum rate.
	BodyMinRate ByteSize `yaml:"body_min_rate" env:"BODY_MIN_RATE"`
}

// Retry configures re-execution of failed-retryable steps.
type Retry struct {
	// MaxAttempts is how many attempts a failed-retryable step gets in all;
	// after the last one fails the step is held for review.
	MaxAttempts int `yaml:"max_attempts" env:"MAX_ATTEMPTS"`
}

// Recovery configures the background resolver of abandoned steps.
type Recovery struct {
	// AbandonAfter is how long a started step may stay untouched, with no
	// call in flight, before the resolver settles it: through the route's
	// lookup, or else by holding it for review (reason abandoned). It never
	// sends the call again.
	AbandonAfter time.Duration `yaml:"abandon_after" env:"ABANDON_AFTER"`
	// Lease is how long a claim lasts without a renewal: a call is never
	// sent once its claim's lease has ended, and another replica takes an
	// interrupted step over only after it. Shorter means faster takeovers
	// and a tighter send window; the call renews it every third.
	Lease time.Duration `yaml:"lease" env:"LEASE"`
	// VerifyLease is the same for a pending verification's claim; zero
	// means the lease, capped at upstream.timeout.
	VerifyLease time.Duration `yaml:"verify_lease" env:"VERIFY_LEASE"`
}

// Verify configures verification probes.
type Verify struct {
	MaxInterval time.Duration `yaml:"max_interval" env:"MAX_INTERVAL"` // longest wait between two probes of one step
}

// Workflows configures workflow-wide policies.
type Workflows struct {
	OnVersionChange policy.VersionChange `yaml:"on_version_change" env:"ON_VERSION_CHANGE"`
}

// Log configures logging.
type Log struct {
	Level  LogLevel  `yaml:"level" env:"LEVEL"`
	Format LogFormat `yaml:"format" env:"FORMAT"`
}

// Shutdown configures a graceful stop.
type Shutdown struct {
	DrainTimeout time.Duration `yaml:"drain_timeout" env:"DRAIN_TIMEOUT"` // how long in-flight requests get to finish
}

// Default returns the configuration used for every setting that the file,
// the environment and the flags leave alone.
func Default() Config {
	return Config{
		Listen: "127.0.0.1:8480",
		Admin:  Admin{Listen: "127.0.0.1:8481"},
		Journal: Journal{
			Path:           "./toolguard.db",
			OpenTimeout:    5 * time.Second,
			Retention:      720 * time.Hour,
			HoldExpiry:     168 * time.Hour,
			CheckOnStart:   CheckAuto,
			ResidentBudget: 256 * MiB,
		},
		Rules: Rules{Dir: "./rules"},
		CA:    CA{Dir: "./ca"},
		Upstream: Upstream{
			Timeout:             30 * time.Second,
			MaxIdleConnsPerHost: 256,
			ConnectPorts:        List{"443", "80"},
		},
		// The credential endpoints of cloud hosts; sources in docs/egress.md.
		Egress: Egress{Deny: List{"169.254.169.254/32", "fd00:ec2::254/128", "169.254.170.2/32",
			"169.254.170.23/32", "fd00:ec2::23/128", "100.100.100.200/32"}},
		Unmatched: policy.UnmatchedPassthrough,
		Guard:     Guard{Mode: policy.ModeEnforce},
		Limits: Limits{
			MaxBody:           8 * MiB,
			BodyBuffer:        4 * MiB,
			MaxStoredResponse: 1 * MiB,
			InFlightWait:      30 * time.Second,
			MaxHeaderBytes:    1 * MiB,
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       120 * time.Second,
			MaxInFlight:       1024,
			MaxConnections:    16384,
			MaxOpenHolds:      1000,
			BodyReadTimeout:   10 * time.Second,
			BodyMinRate:       1 * KiB,
		},
		Retry:     Retry{MaxAttempts: 3},
		Recovery:  Recovery{AbandonAfter: 10 * time.Minute, Lease: 15 * time.Second},
		Verify:    Verify{MaxInterval: 30 * time.Second},
		Workflows: Workflows{OnVersionChange: policy.VersionStop},
		Log:       Log{Level: LevelInfo, Format: FormatAuto},
		Shutdown:  Shutdown{DrainTimeout: 25 * time.Second},

		UnmatchedCredential: List{"Authorization"},
		MCP:                 MCP{UnlistedCredential: List{"Authorization"}},
		Notify:              Notify{DeliveryAttempts: 20, Backoff: time.Second, MaxBackoff: 5 * time.Minute, DeliveryTimeout: 10 * time.Second},
		Telemetry:           Telemetry{Protocol: "http/protobuf", ServiceName: "toolguard", Sampler: "parentbased_always_on"},
	}
}

// Load builds the configuration the way toolguard serve does: Default, then
// the file at path (skipped when path is ""), then the environment (environ
// as from os.Environ), then each override in order (the cmd layer passes one
// that applies the flags that were set), then LoadSecrets, Validate and
// CheckFiles.
func Load(path string, environ []string, overrides ...func(*Config)) (Config, error) {
	c := Default()
	if path != "" {
		var err error
		if c, err = ParseFile(path, c); err != nil {
			return Config{}, err
		}
	}
	if err := ApplyEnv(&c, environ); err != nil {
		return Config{}, err
	}
	for _, o := range overrides {
		o(&c)
	}
	if err := c.LoadSecrets(); err != nil {
		return Config{}, err
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	if err := c.CheckFiles(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// ParseFile reads the YAML file at path over base, like Parse; its errors
// name the file: "config.yaml:3:5: unknown field "lisen"".
func ParseFile(path string, base Config) (Config, error) {
	f, err := os.Open(path)
	if err != nil {
		msg := err.Error()
		if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
			msg = pe.Err.Error() // the path is already in File
		}
		return Config{}, &Error{File: path, Msg: "cannot open config file: " + msg, Err: err}
	}
	defer f.Close()
	c, err := Parse(f, base)
	if e := (*Error)(nil); errors.As(err, &e) {
		e.File = path
	}
	return c, err
}

// maxFileSize bounds what Parse reads; a config file is a few KiB.
const maxFileSize = 1 << 20

// Parse reads one YAML document from r and sets each setting it names on a
// copy of base; settings it leaves out, or gives an empty (null) value, keep
// base's value. It is strict: an unknown key, a mapping where a value belongs
// or a value that does not parse is an *Error with its line and column. Parse
// does not validate (see Validate) and touches nothing outside its result.
func Parse(r io.Reader, base Config) (Config, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxFileSize+1))
	if err != nil {
		return Config{}, &Error{Msg: "cannot read config: " + err.Error(), Err: err}
	}
	if len(data) > maxFileSize {
		return Config{}, &Error{Msg: fmt.Sprintf("config is larger than %v", ByteSize(maxFileSize))}
	}
	c := base
	if _, err := decodeYAML(data, &c); err != nil {
		return Config{}, err
	}
	return c, nil
}

// LoadSecrets reads Admin.TokenFile into Admin.Token,
// Admin.AgentTokenFile into Admin.AgentToken and each webhook's SecretFile
// into its Secret, dropping trailing newlines, and clears the file fields,
// so a second call does nothing. A secret given both directly and as a
// file, an unreadable file, or an empty one (a webhook secret: one shorter
// than 16 bytes) is an *Error naming the file.
func (c *Config) LoadSecrets() error {
	if err := loadSecret(&c.Admin.Token, &c.Admin.TokenFile, "admin.token"); err != nil {
		return err
	}
	if err := loadSecret(&c.Admin.AgentToken, &c.Admin.AgentTokenFile, "admin.agent_token"); err != nil {
		return err
	}
	return c.Notify.loadWebhookSecrets()
}

func loadSecret(token, file *string, field string) error {
	if *file == "" {
		return nil
	}
	e := &Error{Field: field + "_file", Value: *file}
	if *token != "" {
		e.Msg = fmt.Sprintf("set together with %s; use one of them (got %s)", field, *file)
		return e
	}
	data, err := os.ReadFile(*file)
	if err != nil {
		e.Msg, e.Err = fmt.Sprintf("cannot read token file: %v", err), err
		return e
	}
	secret := strings.TrimRight(string(data), "\r\n")
	if strings.TrimSpace(secret) == "" {
		e.Msg = fmt.Sprintf("token file %s is empty", *file)
		return e
	}
	*token, *file = secret, ""
	return nil
}

// Redacted returns a copy of c with the tokens and webhook secrets replaced
// by "REDACTED" and the webhook URLs masked (RedactURL), fit for logging
// or printing.
func (c Config) Redacted() Config {
	for _, s := range []*string{&c.Admin.Token, &c.Admin.AgentToken} {
		if *s != "" {
			*s = "REDACTED"
		}
	}
	c.Journal.DSN = RedactDSN(c.Journal.DSN)
	if c.Notify.Webhooks != nil {
		hooks := append([]Webhook(nil), c.Notify.Webhooks...)
		for i := range hooks {
			hooks[i].URL = RedactURL(hooks[i].URL)
			if hooks[i].Secret != "" {
				hooks[i].Secret = "REDACTED"
			}
		}
		c.Notify.Webhooks = hooks
	}
	return c
}

// dsnPassword finds the password of a key/value DSN.
var dsnPassword = regexp.MustCompile(`(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)`)

// RedactDSN replaces the password of a PostgreSQL DSN, URL or key/value,
// with REDACTED; a URL that does not parse is redacted whole.
func RedactDSN(dsn string) string {
	if dsn == "" {
		return ""
	}
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "REDACTED"
		}
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "REDACTED")
		}
		q := u.Query()
		if q.Has("password") {
			q.Set("password", "REDACTED")
			u.RawQuery = q.Encode()
		}
		return u.String()
	}
	return dsnPassword.ReplaceAllString(dsn, "${1}REDACTED")
}
