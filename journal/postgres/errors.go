package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/toolguard/toolguard/journal"
)

// ErrSecretMismatch means the database was first used with another HMAC
// secret than the one this replica was given: keys would differ between
// replicas and duplicates would pass, so Open refuses.
var ErrSecretMismatch = errors.New("journal secret differs from the one the database was set up with")

// ErrDSN means Options.DSN is neither a libpq URL nor a key/value string.
// The DSN itself is not repeated: it may hold a password.
var ErrDSN = errors.New("journal dsn is not a valid libpq URL (postgres://...) or key/value string (host=... dbname=...)")

// classify wraps err, the failure of op, into the journal's sentinels:
//   - the server could not be reached, or went away, or refused for lack of
//     resources: journal.ErrUnavailable, unless
//   - the operation was a write (wrote) whose request may have reached the
//     server (pgconn.SafeToRetry is false) and no server error came back:
//     its commit is unknown, journal.ErrCommitUnknown.
//
// A server error (SQLSTATE) of severity ERROR means the statement failed
// and nothing of it was committed; one that ends the session (FATAL) after
// a write leaves the commit unknown.
func classify(op string, err error, wrote bool) error {
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// A session ended by the server (FATAL: a shutdown, a terminated
		// backend) may end after its last statement committed and before
		// the acknowledgement went out.
		if wrote && (pgErr.Severity == "FATAL" || pgErr.Severity == "PANIC") {
			return fmt.Errorf("%s: %w: re-read before deciding: %w", op, journal.ErrCommitUnknown, err)
		}
		if unavailableState(pgErr.Code) {
			return fmt.Errorf("%s: %w: %w", op, journal.ErrUnavailable, err)
		}
		return fmt.Errorf("%s: %w", op, err)
	}
	var connectErr *pgconn.ConnectError
	sent := !pgconn.SafeToRetry(err) && !errors.As(err, &connectErr) // a failed connect sent nothing
	switch {
	case wrote && sent && (connectionError(err) || contextError(err)):
		return fmt.Errorf("%s: %w: re-read before deciding: %w", op, journal.ErrCommitUnknown, err)
	case contextError(err) && !pgconn.Timeout(err):
		return fmt.Errorf("%s: %w", op, err)
	case connectionError(err):
		return fmt.Errorf("%s: %w: %w", op, journal.ErrUnavailable, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// unavailableState reports SQLSTATEs that mean the database cannot serve
// now: connection exceptions (08), insufficient resources (53), operator
// intervention such as a shutdown (57P0x), system errors (58), and a
// database in recovery refusing writes (25006 read_only_sql_transaction).
func unavailableState(code string) bool {
	return strings.HasPrefix(code, "08") || strings.HasPrefix(code, "53") ||
		strings.HasPrefix(code, "57P") || strings.HasPrefix(code, "58") || code == "25006"
}

// connectionError reports a failure of the connection rather than of the
// statement.
func connectionError(err error) bool {
	var netErr net.Error
	var connectErr *pgconn.ConnectError
	return errors.As(err, &netErr) || errors.As(err, &connectErr) || pgconn.Timeout(err) ||
		pgconn.SafeToRetry(err) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, pgconn.ErrConnClosed) ||
		strings.Contains(err.Error(), "conn closed")
}

func contextError(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// retryState reports server errors after which a conditional write simply
// lost a race and nothing was written: serialization failures and
// deadlocks.
func retryState(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40001" || pgErr.Code == "40P01")
}

// isUndefinedTable reports SQLSTATE 42P01 (and a missing schema, 3F000).
func isUndefinedTable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "42P01" || pgErr.Code == "3F000")
}

// fault classifies err like classify and, when the connection itself
// failed, resets the pool: an outage or a failover breaks every
// connection, and the pool would otherwise hand out the dead ones one by
// one, failing a call for each.
func (j *Journal) fault(op string, err error, wrote bool) error {
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) && connectionError(err) {
		j.pool.Reset()
	}
	return classify(op, err, wrote)
}
