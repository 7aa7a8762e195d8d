package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
)

func TestCheckFindsProblems(t *testing.T) {
	for _, tc := range []struct {
		name, sql, want string
	}{
		{name: "record disagrees with its columns", sql: "UPDATE steps SET status = 5 WHERE key = 'a'",
			want: "step a: record says key a, status started"},
		{name: "outcome without response", sql: `UPDATE steps SET status = 3, record = jsonb_set(record, '{status}', '"committed"') WHERE key = 'a'`,
			want: "step a: committed without a response or evidence"},
		{name: "epoch never handed out", sql: `UPDATE steps SET epoch = 999, record = jsonb_set(record, '{epoch}', '999') WHERE key = 'a'`,
			want: "step a: epoch 999 was never handed out"},
		{name: "event beyond the revision", sql: "UPDATE steps SET revision = 0 WHERE key = 'a'",
			want: "step a: revision 0 but events up to 1"},
		{name: "event numbered twice", sql: `INSERT INTO events SELECT seq + 1, xid, key, key_seq, time, type, from_status,
			to_status, hold, reason, note, epoch, fence FROM events WHERE key = 'a'`,
			want: "events of a: key_seq 1 recorded 2 times"},
		{name: "workflow counts", sql: "UPDATE workflows SET started = 0",
			want: "workflow w: counts 2/0/0/0/0/0/1, steps say 2/0/1/0/0/0/1"},
		{name: "step of a missing workflow", sql: "DELETE FROM workflows",
			want: "workflow w: counts missing"},
		{name: "newer schema", sql: "INSERT INTO schema_version (version) VALUES (99)",
			want: fmt.Sprintf("schema is at version 99, want %d", SchemaVersion)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := openTest(t, Options{})
			mustApply(t, j, "a", func(*journal.Step) (journal.Change, error) {
				ch, err := claim("a", time.Minute)(nil)
				ch.Step.Workflow = "w"
				return ch, err
			})
			put(t, j, journal.Step{Key: "b", Status: journal.StatusPrepared, Workflow: "w"})
			mustCheck(t, j)
			if _, err := j.pool.Exec(context.Background(), tc.sql); err != nil {
				t.Fatal(err)
			}
			var msgs []string
			for _, err := range j.Check() {
				msgs = append(msgs, err.Error())
			}
			if !strings.Contains(strings.Join(msgs, "\n"), tc.want) {
				t.Fatalf("Check() = %q, want a problem containing %q", msgs, tc.want)
			}
		})
	}
}
