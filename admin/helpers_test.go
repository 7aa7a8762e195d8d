package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/journal/bolt"
)

// testProxy stands for the proxy in tests. Its zero value is ready, has
// nothing still landing, puts every caller of every api in the unscoped
// scope and has nothing left to do about any step.
type testProxy struct {
	notReady bool
	// landsUntil is when every step's last attempt can no longer land.
	landsUntil time.Time
	// scopes maps an api and a credential ("api credential") to its scope;
	// an api not in apis is unknown.
	scopes map[string]string
	apis   []string
	// next maps a step's key to its next action.
	next map[string]string
}

func (p testProxy) Ready() bool { return !p.notReady }

func (p testProxy) Settle(*journal.Step) (until, now time.Time) { return p.landsUntil, time.Now() }

func (p testProxy) CredentialScope(api, header, credential string) (string, error) {
	if p.apis != nil && !slices.Contains(p.apis, api) {
		return "", fmt.Errorf("api %q: no rule file has that name", api)
	}
	return p.scopes[api+" "+credential], nil
}

func (p testProxy) NextAction(st *journal.Step) string { return p.next[st.Key] }

// openJournal opens a bbolt journal in a temporary directory, closed when
// the test ends.
func openJournal(tb testing.TB) *bolt.Journal {
	tb.Helper()
	j, err := bolt.Open(filepath.Join(tb.TempDir(), "tg.db"), bolt.Options{})
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

// putHeld records a step of workflow wf, scope (credential MAC) scope,
// held as hold says: awaiting approval (prepared, never sent), or needs
// review (started, outcome unknown).
func putHeld(tb testing.TB, j Journal, key, wf, scope string, hold journal.Hold) {
	tb.Helper()
	st := journal.Step{Key: key, API: "billing", Route: "create_invoice", Workflow: wf, CredentialMAC: scope,
		Method: "POST", Scheme: "https", Host: "billing.example.com", Path: "/v1/invoices", BodyHash: "b-" + key}
	if hold == journal.HoldAwaitingApproval {
		st.Status, st.Hold, st.HoldReason = journal.StatusPrepared, hold, "approval_required"
		putStep(tb, j, st)
		return
	}
	st.Status = journal.StatusStarted
	putStep(tb, j, st)
	st.Hold, st.HoldReason, st.LastError = hold, "outcome_unknown", "upstream answered 500"
	putStep(tb, j, st)
}

// call sends one admin request with the bearer token (none when empty)
// and decodes a JSON answer into out when it is not nil.
func call(tb testing.TB, base, method, path, token, body string, header http.Header, out any) int {
	tb.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		tb.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			tb.Fatalf("%s %s: decode answer: %v", method, path, err)
		}
	}
	return resp.StatusCode
}
