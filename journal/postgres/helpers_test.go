package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/toolguard/toolguard/internal/pgtest"
	"github.com/toolguard/toolguard/journal"
)

// openTest opens a journal on a fresh schema of the test database; it is
// closed when the test ends. opts.DSN and opts.Schema default to the test
// database and a fresh schema.
func openTest(t *testing.T, opts Options) *Journal { return openTestTB(t, opts) }

func openTestTB(t testing.TB, opts Options) *Journal {
	t.Helper()
	if opts.DSN == "" {
		opts.DSN = pgtest.DSN(t)
	}
	if opts.Schema == "" {
		opts.Schema = pgtest.Schema(t)
	}
	j, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = j.Close() })
	j.anyTransition = !opts.ReadOnly // the tests here seed states directly
	return j
}

// claim claims a new step of key (started), or changes nothing when the
// key has a step.
func claim(key string, lease time.Duration) journal.Mutation {
	return func(cur *journal.Step) (journal.Change, error) {
		if cur != nil {
			return journal.Change{}, journal.ErrNoChange
		}
		return journal.Change{Step: journal.Step{Key: key, API: "pay", Route: "charge", Status: journal.StatusStarted,
			Method: "POST", Host: "api.example", Path: "/charges", BodyHash: "h1"}, Claim: true, Lease: lease}, nil
	}
}

// commit records a 200 outcome for the owner of (epoch, fence).
func commit(epoch, fence uint64, body string) journal.Mutation {
	return journal.Fenced(epoch, fence, func(cur *journal.Step) (journal.Change, error) {
		s := *cur
		s.Status = journal.StatusCommitted
		s.Response = &journal.Response{Status: 200, Body: []byte(body), BodyHash: "rh"}
		return journal.Change{Step: s}, nil
	})
}

// mustApply applies m and fails the test on an error.
func mustApply(t *testing.T, j *Journal, key string, m journal.Mutation) journal.Step {
	t.Helper()
	s, err := j.Apply(context.Background(), key, m)
	if err != nil {
		t.Fatalf("Apply %s: %v", key, err)
	}
	return s
}

func mustCheck(t *testing.T, j *Journal) {
	t.Helper()
	for _, err := range j.Check() {
		t.Errorf("Check: %v", err)
	}
}
