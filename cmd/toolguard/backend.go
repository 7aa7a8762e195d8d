package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/toolguard/toolguard/admin"
	"github.com/toolguard/toolguard/config"
	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/journal/postgres"
	"github.com/toolguard/toolguard/metrics"
	"github.com/toolguard/toolguard/notify"
	"github.com/toolguard/toolguard/proxy"
	"github.com/toolguard/toolguard/tlsca"
)

// The proxy answers what the admin API asks of it, and every journal
// backend is what the admin API reads.
var (
	_ admin.Proxy   = (*proxy.Server)(nil)
	_ admin.Journal = journal.Store(nil)
)

// notifyBackend is what hold notifications need of the journal's
// backend: where their cursors are kept, and how replicas share the work
// (nil: one process per journal).
type notifyBackend struct {
	cursors   notify.Cursors
	exclusive func(ctx context.Context, name string, fn func(context.Context) error) (bool, error)
}

var _ notify.Cursors = (*postgres.Cursors)(nil)

// openJournal opens the configured backend for writing, and returns it
// with its file maintenance (online backups, the size gauge) and what hold
// notifications need of it. bbolt's journal file has a Maintainer; a
// PostgreSQL journal has none (pg_dump backs it up), so it is nil there.
func openJournal(ctx context.Context, cfg config.Config, log *slog.Logger, metrics *metrics.Metrics, secret []byte) (journal.Store, journal.Maintainer, notifyBackend, error) {
	if cfg.Journal.Backend != config.BackendPostgres {
		b, err := openBolt(cfg, log, metrics)
		if err != nil {
			return nil, nil, notifyBackend{}, err
		}
		// bbolt has one writer process: the cursors live in a file beside
		// the journal, and no lock is needed.
		return b, b, notifyBackend{cursors: notify.NewFileCursors(notifyCursorsPath(cfg.Journal.Path))}, nil
	}
	pg, err := openPostgres(ctx, cfg, log, metrics, secret)
	if err != nil {
		return nil, nil, notifyBackend{}, err
	}
	// Replicas share the cursors, and one of them delivers each webhook's
	// events at a time.
	return pg, nil, notifyBackend{cursors: pg.Cursors(), exclusive: pg.RunExclusive}, nil
}

// openPostgres opens the PostgreSQL journal at journal.dsn for writing and,
// with journal.check_on_start: always, checks it.
func openPostgres(ctx context.Context, cfg config.Config, log *slog.Logger, metrics *metrics.Metrics, secret []byte) (*postgres.Journal, error) {
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	j, err := postgres.Open(octx, postgres.Options{DSN: cfg.Journal.DSN, Secret: secret, Logger: log,
		OnCommit: metrics.ObserveCommit})
	if errors.Is(err, postgres.ErrDSN) {
		return nil, &config.Error{Field: "journal.dsn", Msg: err.Error()}
	}
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	if cfg.Journal.CheckOnStart == config.CheckAlways {
		started := time.Now()
		if problems := j.Check(); len(problems) > 0 {
			j.Close()
			return nil, fmt.Errorf("journal %s fails its consistency check: %v (%d problems; run toolguard journal check --dsn ...)",
				j.Path(), problems[0], len(problems))
		}
		log.Info("journal checked", "journal", j.Path(), "duration", time.Since(started))
	}
	return j, nil
}

// loadSecret returns the HMAC secret: journal.secret_file's when set (it
// must exist: replicas share it), else the bbolt journal's own
// <path>.secret, created on first start.
func loadSecret(cfg config.Config) ([]byte, error) {
	if cfg.Journal.SecretFile == "" {
		return tlsca.LoadOrCreateSecret(secretPath(cfg.Journal.Path))
	}
	b, err := os.ReadFile(cfg.Journal.SecretFile)
	if err != nil {
		return nil, fmt.Errorf("read journal.secret_file: %w", err)
	}
	if trimmed := strings.TrimRight(string(b), "\r\n"); len(trimmed) < 32 {
		return nil, fmt.Errorf("read journal.secret_file %s: %d bytes, want at least 32 (e.g. head -c 32 /dev/urandom > FILE)",
			cfg.Journal.SecretFile, len(trimmed))
	}
	return b, nil
}
