package postgres

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/toolguard/toolguard/journal"
)

// DefaultSchema is the schema that holds the journal's tables when
// Options.Schema is empty.
const DefaultSchema = "toolguard"

// DefaultMaxConns is the journal's connection pool size when neither
// Options.MaxConns nor the DSN's pool_max_conns sets one. Each replica also
// holds one listener connection (Watch).
const DefaultMaxConns = 16

// Options configure Open and Migrate.
type Options struct {
	// DSN locates the database: a libpq URL (postgres://...) or key/value
	// string ("host=... dbname=..."). Unset parts come from the standard
	// PG* environment variables (PGHOST, PGUSER, PGPASSWORD...).
	DSN string
	// Schema holds the journal's tables; empty means DefaultSchema. Tests
	// give each run its own.
	Schema string
	// Secret is the HMAC secret shared by all replicas. Open stores its
	// fingerprint on first use and refuses (ErrSecretMismatch) a secret
	// whose fingerprint differs. Nil skips the check (inspection tools).
	Secret []byte
	// ReadOnly opens for inspection: no migration (a schema of another
	// version is refused), no epoch, and writes fail with
	// journal.ErrReadOnly.
	ReadOnly bool
	// MaxConns bounds the connection pool; 0 means DefaultMaxConns unless
	// the DSN sets pool_max_conns. (pgxpool's own default, the larger of 4
	// and the number of CPUs, made guarded calls at concurrency 64 wait for
	// a connection on nearly every statement: bench/results/diary.md.)
	MaxConns int32
	// ConnectTimeout bounds a connection attempt; zero means 5s, unless the
	// DSN sets connect_timeout.
	ConnectTimeout time.Duration
	// OpTimeout bounds the methods that take no context (Get, List,
	// Sweep...); zero means 10s. Past it they fail with
	// journal.ErrUnavailable.
	OpTimeout time.Duration
	// Logger receives fencing rejections, migrations and listener
	// reconnects; nil discards them.
	Logger *slog.Logger
	// OnCommit, when set, is called after every committed write of Apply
	// with its duration (the statement's round trip) and a batch of 1
	// (metrics). It must not block.
	OnCommit func(d time.Duration, batch int)
	// Now stamps records (CreatedAt, UpdatedAt, event times); nil means the
	// database's clock. Leases always use the database's clock.
	Now func() time.Time

	// tracer sees every statement (tests count round trips).
	tracer pgx.QueryTracer
}

func (o Options) withDefaults() Options {
	if o.Schema == "" {
		o.Schema = DefaultSchema
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.OpTimeout <= 0 {
		o.OpTimeout = 10 * time.Second
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 5 * time.Second
	}
	return o
}

// poolConfig parses the DSN (pgx reads the PG* variables for what it
// leaves unset) and points every connection at the schema.
func (o Options) poolConfig() (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(o.DSN)
	if err != nil {
		// pgx's message may quote the DSN, password included.
		return nil, ErrDSN
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = o.ConnectTimeout
	}
	switch {
	case o.MaxConns > 0:
		cfg.MaxConns = o.MaxConns
	case !strings.Contains(o.DSN, "pool_max_conns"):
		cfg.MaxConns = DefaultMaxConns
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{o.Schema}.Sanitize()
	if o.ReadOnly {
		cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	}
	if o.tracer != nil {
		cfg.ConnConfig.Tracer = o.tracer
	}
	return cfg, nil
}

// Journal is the PostgreSQL backend of the journal: any number of toolguard
// processes may share one. It is safe for concurrent use.
type Journal struct {
	pool     *pgxpool.Pool
	opts     Options
	epoch    uint64
	channel  string // NOTIFY channel of this schema
	log      *slog.Logger
	readOnly bool
	closed   atomic.Bool
	commits  atomic.Uint64
	watch    *watcher
	notify   *notifier
	sql      statements
	hints    hints
	// anyTransition lets the package's own tests seed any state without
	// the allowlist (journal.AllowedChange), which the conformance suite
	// (journaltest) tests on its own.
	anyTransition bool
}

var _ journal.Store = (*Journal)(nil)

// Open connects to the database, migrates the schema (a writable Open,
// under an advisory lock, so replicas starting together do not race),
// checks the secret's fingerprint and takes a new epoch from the epochs
// sequence. A database that cannot be reached fails with
// journal.ErrUnavailable, a newer schema with ErrSchemaNewer, another
// secret with ErrSecretMismatch.
func Open(ctx context.Context, opts Options) (*Journal, error) {
	opts = opts.withDefaults()
	cfg, err := opts.poolConfig()
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, classify("connect to journal database", err, false)
	}
	j := &Journal{pool: pool, opts: opts, log: opts.Logger, readOnly: opts.ReadOnly,
		channel: channelName(opts.Schema), sql: newStatements()}
	j.watch = newWatcher(j)
	if err := j.init(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	if !j.readOnly {
		j.notify = newNotifier(j)
	}
	return j, nil
}

func (j *Journal) init(ctx context.Context) error {
	if j.readOnly {
		if err := checkVersion(ctx, j.pool, j.opts.Schema); err != nil {
			return err
		}
		return j.checkSecret(ctx, false)
	}
	if _, _, err := migrate(ctx, j.pool, j.opts.Schema, j.log); err != nil {
		return err
	}
	if err := j.checkSecret(ctx, true); err != nil {
		return err
	}
	var epoch int64
	if err := j.pool.QueryRow(ctx, "SELECT nextval('epochs')").Scan(&epoch); err != nil {
		return classify("start journal epoch", err, false)
	}
	j.epoch = uint64(epoch)
	return nil
}

// channelName is the NOTIFY channel of a schema: toolguard_<schema>, or a
// hash of the schema's name when that is longer than an identifier may be.
func channelName(schema string) string {
	if c := "toolguard_" + schema; len(c) <= 63 {
		return c
	}
	sum := sha256.Sum256([]byte(schema))
	return "toolguard_" + hex.EncodeToString(sum[:16])
}

// Fingerprint is what the database stores of the HMAC secret: the hex
// HMAC-SHA256 of a fixed text under the secret. It identifies the secret
// without revealing it.
func Fingerprint(secret []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("toolguard-fingerprint"))
	return hex.EncodeToString(m.Sum(nil))
}

// checkSecret compares the secret's fingerprint with the database's,
// storing it first when the database has none and store is set.
func (j *Journal) checkSecret(ctx context.Context, store bool) error {
	if j.opts.Secret == nil {
		return nil
	}
	mine := Fingerprint(j.opts.Secret)
	if store {
		if _, err := j.pool.Exec(ctx, "INSERT INTO meta (name, value) VALUES ('secret_fingerprint', $1) ON CONFLICT (name) DO NOTHING", mine); err != nil {
			return classify("store secret fingerprint", err, false)
		}
	}
	var theirs string
	err := j.pool.QueryRow(ctx, "SELECT value FROM meta WHERE name = 'secret_fingerprint'").Scan(&theirs)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return classify("read secret fingerprint", err, false)
	}
	if !hmac.Equal([]byte(mine), []byte(theirs)) {
		return fmt.Errorf("%w: its fingerprint is %.12s…, the database's is %.12s…; give every replica the same journal.secret_file",
			ErrSecretMismatch, mine, theirs)
	}
	return nil
}

// Epoch returns the epoch of this Open, unique across the replicas and
// restarts sharing the database; 0 for a read-only journal.
func (j *Journal) Epoch() uint64 { return j.epoch }

// ReadOnly reports whether the journal was opened with Options.ReadOnly.
func (j *Journal) ReadOnly() bool { return j.readOnly }

// Commits returns the number of transactions this Journal committed since
// Open (Open's own not counted): one per written Apply, Renew, checkpoint
// and sweep. Divided by the number of Apply calls it gives the commits per
// write.
func (j *Journal) Commits() uint64 { return j.commits.Load() }

// Schema returns the schema that holds the journal's tables.
func (j *Journal) Schema() string { return j.opts.Schema }

// Pool returns the connection pool (metrics: pool.Stat()).
func (j *Journal) Pool() *pgxpool.Pool { return j.pool }

// Close stops the listener and closes the pool; calls that follow fail
// with journal.ErrClosed. Close is idempotent.
func (j *Journal) Close() error {
	if j.closed.Swap(true) {
		return nil
	}
	j.watch.close()
	if j.notify != nil {
		j.notify.close()
	}
	j.pool.Close()
	return nil
}

// begin fails with journal.ErrClosed once Close was called.
func (j *Journal) begin(op string) error {
	if j.closed.Load() {
		return fmt.Errorf("%s: %w", op, journal.ErrClosed)
	}
	return nil
}
