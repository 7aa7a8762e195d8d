package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/toolguard/toolguard/config"
	"github.com/toolguard/toolguard/journal/postgres"
)

// envDSN is the DSN the inspection commands use without --dsn: the serve
// configuration's, when its environment selects the postgres backend.
func envDSN() string {
	if os.Getenv("TOOLGUARD_JOURNAL_BACKEND") == config.BackendPostgres.String() {
		return os.Getenv("TOOLGUARD_JOURNAL_DSN")
	}
	return ""
}

// openPostgresReadOnly opens the journal in the database at dsn for
// inspection: no migration, no epoch, read-only transactions.
func openPostgresReadOnly(ctx context.Context, dsn string) (*postgres.Journal, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	j, err := postgres.Open(ctx, postgres.Options{DSN: dsn, ReadOnly: true})
	if errors.Is(err, postgres.ErrDSN) {
		return nil, usagef("--dsn: %v", err)
	}
	return j, err
}

const journalMigrateHelp = "journal migrate [--dsn DSN]"

// journalMigrate brings the PostgreSQL journal's schema up to this
// binary's version; serve does the same on start.
func journalMigrate(ctx context.Context, args []string, stdout io.Writer) error {
	var dsn string
	fs := newFlags("journal migrate", journalMigrateHelp, stdout)
	fs.StringVar(&dsn, "dsn", "", "PostgreSQL `DSN` of the journal (default $TOOLGUARD_JOURNAL_DSN)")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if dsn == "" {
		dsn = os.Getenv("TOOLGUARD_JOURNAL_DSN")
	}
	if dsn == "" {
		return usagef("journal migrate: --dsn (or TOOLGUARD_JOURNAL_DSN) is required")
	}
	from, to, err := postgres.Migrate(ctx, postgres.Options{DSN: dsn})
	if errors.Is(err, postgres.ErrDSN) {
		return usagef("--dsn: %v", err)
	}
	if err != nil {
		return err
	}
	if from == to {
		fmt.Fprintf(stdout, "journal schema %s: at version %d, nothing to do\n", postgres.DefaultSchema, to)
	} else {
		fmt.Fprintf(stdout, "journal schema %s: migrated from version %d to %d\n", postgres.DefaultSchema, from, to)
	}
	return nil
}
