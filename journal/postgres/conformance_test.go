package postgres_test

import (
	"context"
	"sync"
	"testing"

	"github.com/toolguard/toolguard/internal/pgtest"
	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/journal/journaltest"
	"github.com/toolguard/toolguard/journal/postgres"
)

// TestConformance runs the backend conformance suite against PostgreSQL:
// each test gets a schema of its own, and a name opened again opens the
// same schema (another replica, or a restart, with a new epoch).
func TestConformance(t *testing.T) {
	dsn := pgtest.DSN(t)
	journaltest.Run(t, func(t *testing.T, opts journaltest.Options) journal.Store {
		j, err := postgres.Open(context.Background(), postgres.Options{
			DSN:    dsn,
			Schema: schemaOf(t, opts.Name),
			Secret: []byte("0123456789abcdef0123456789abcdef"),
		})
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		t.Cleanup(func() { j.Close() })
		return j
	})
}

var (
	schemasMu sync.Mutex
	schemas   = map[*testing.T]map[string]string{}
)

// schemaOf is the schema of the journal named name in t, the same on every
// call within t.
func schemaOf(t *testing.T, name string) string {
	schemasMu.Lock()
	defer schemasMu.Unlock()
	m, ok := schemas[t]
	if !ok {
		m = map[string]string{}
		schemas[t] = m
		t.Cleanup(func() { schemasMu.Lock(); delete(schemas, t); schemasMu.Unlock() })
	}
	if s, ok := m[name]; ok {
		return s
	}
	s := pgtest.Schema(t)
	m[name] = s
	return s
}
