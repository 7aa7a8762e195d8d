package admin

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
)

// testProxy stands for the proxy in tests: ready, nothing still landing,
// an unscoped caller for every api, and the same next action for every
// step (next).
type testProxy struct{ next string }

func (testProxy) Ready() bool                                            { return true }
func (testProxy) Settle(*journal.Step) (until, now time.Time)            { return time.Time{}, time.Time{} }
func (testProxy) CredentialScope(string, string, string) (string, error) { return "", nil }
func (p testProxy) NextAction(*journal.Step) string                      { return p.next }

// openJournal opens a bbolt journal in a temporary directory, closed when
// the test ends.
func openJournal(tb testing.TB) *journal.Bolt {
	tb.Helper()
	j, err := journal.Open(filepath.Join(tb.TempDir(), "tg.db"), journal.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { j.Close() })
	return j
}

// putStep records st as the change of its key (a claim when it is
// started).
func putStep(tb testing.TB, j Journal, st journal.Step) {
	tb.Helper()
	if _, err := j.Apply(context.Background(), st.Key, func(*journal.Step) (journal.Change, error) {
		return journal.Change{Step: st, Claim: st.Status == journal.StatusStarted}, nil
	}); err != nil {
		tb.Fatal(err)
	}
}
