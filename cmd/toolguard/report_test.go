package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/admin"
	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/journal/bolt"
)

// observedJournal is a stopped proxy's journal holding observations: a
// new intent and its duplicate, a call that needs approval and an invalid
// body.
func observedJournal(t *testing.T) (path string, dup string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "toolguard.db")
	j, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dup = strings.Repeat("d", 64)
	for _, o := range []struct {
		key, route string
		would      journal.Would
	}{
		{dup, "create_invoice", journal.WouldForward},
		{dup, "create_invoice", journal.WouldReplay},
		{strings.Repeat("a", 64), "payout", journal.WouldHoldApproval},
		{strings.Repeat("b", 64), "create_invoice", journal.WouldRefuseInvalidBody},
	} {
		_, err := j.Apply(context.Background(), o.key, func(cur *journal.Step) (journal.Change, error) {
			st := journal.Step{Key: o.key, API: "billing", Route: o.route, Observed: true, Status: journal.StatusCommitted, Evidence: "observed"}
			return journal.Change{Step: st, Event: journal.EventObserved, Reason: journal.ObservedReason(o.would, "test")}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	return path, dup
}

func TestReport(t *testing.T) {
	cleanEnv(t)
	offline, dup := observedJournal(t)
	onlinePath, _ := observedJournal(t)
	j, err := bolt.Open(onlinePath, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	api := httptest.NewServer(admin.New(admin.Options{Journal: j, InsecureNoAuth: true}))
	defer api.Close()
	for _, src := range []struct{ name, flag, value string }{
		{name: "offline", flag: "--journal", value: offline},
		{name: "online", flag: "--admin", value: api.URL},
	} {
		t.Run(src.name, func(t *testing.T) {
			code, stdout, stderr := cli(t, "report", "--since", "1h", src.flag, src.value)
			for _, want := range []string{
				"Observed since ", ": 4 calls, forwarded untouched.",
				"Enforcement would have stopped 1 duplicate, held 1 call and refused 1 call.",
				"Duplicates it would have stopped:", "billing  create_invoice  replay  1      " + dup,
				"Holds it would have made:", "hold_approval",
				"Refusals it would have made:", "refuse_invalid_body",
			} {
				if code != 0 || !strings.Contains(stdout, want) {
					t.Errorf("exit code %d, output lacks %q:\n%s%s", code, want, stdout, stderr)
				}
			}
			code, stdout, _ = cli(t, "report", "--json", src.flag, src.value)
			var rep admin.ObservationReport
			if err := json.Unmarshal([]byte(stdout), &rep); code != 0 || err != nil || rep.Observed != 4 || rep.Stopped != 1 || len(rep.Routes) != 2 {
				t.Errorf("--json: exit code %d, %+v, %v", code, rep, err)
			}
		})
	}
	if code, _, stderr := cli(t, "report", "--since", "0s", "--journal", offline); code != 2 || !strings.Contains(stderr, "--since must be a positive duration") {
		t.Errorf("--since 0s: exit code %d, %s", code, stderr)
	}
	empty := stoppedJournal(t)
	if code, stdout, _ := cli(t, "report", "--journal", empty); code != 0 || !strings.Contains(stdout, "No observations since") {
		t.Errorf("no observations: exit code %d\n%s", code, stdout)
	}
}
