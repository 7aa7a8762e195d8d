package admin

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/journal/bolt"
)

// observe journals an observed call of route by the caller scope, saying
// that enforcement would have done w.
func observe(tb testing.TB, j Journal, key, route, scope string, w journal.Would) {
	tb.Helper()
	if _, err := j.Apply(context.Background(), key, func(cur *journal.Step) (journal.Change, error) {
		st := journal.Step{Key: key, API: "billing", Route: route, CredentialMAC: scope, Method: "POST", BodyHash: "b"}
		if cur != nil {
			st = *cur
		}
		st.Observed, st.Status, st.Evidence = true, journal.StatusCommitted, "observed: upstream answered 201 Created"
		st.Attempt++
		return journal.Change{Step: st, Event: journal.EventObserved, Reason: journal.ObservedReason(w, "test")}, nil
	}); err != nil {
		tb.Fatal(err)
	}
}

func TestObservations(t *testing.T) {
	clock := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	j, err := bolt.Open(filepath.Join(t.TempDir(), "tg.db"), bolt.Options{Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	keyA, keyB, keyC, keyD := strings.Repeat("a", 64), strings.Repeat("b", 64), strings.Repeat("c", 64), strings.Repeat("d", 64)
	macA, macB := strings.Repeat("1", 64), strings.Repeat("2", 64)
	observe(t, j, keyD, "create_invoice", macA, journal.WouldForward) // before the window
	since := clock.Add(time.Minute)
	clock = since
	observe(t, j, keyD, "create_invoice", macA, journal.WouldReplay)
	observe(t, j, keyA, "create_invoice", macA, journal.WouldForward)
	observe(t, j, keyA, "create_invoice", macA, journal.WouldReplay)
	observe(t, j, keyA, "create_invoice", macA, journal.WouldWait)
	observe(t, j, keyB, "payout", macB, journal.WouldHoldApproval)
	observe(t, j, keyC, "payout", macB, journal.WouldRefuseInvalidBody)
	putHeld(t, j, strings.Repeat("e", 64), "", macA, journal.HoldAwaitingApproval) // not an observation

	rep, err := Observations(j, since, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := ObservationReport{Since: since.UTC(), Observed: 6, Stopped: 3, Held: 1, Refused: 1,
		Would: map[string]int{"forward": 1, "replay": 2, "wait": 1, "hold_approval": 1, "refuse_invalid_body": 1},
		Routes: []RouteObservations{
			{API: "billing", Route: "create_invoice", Observed: 4, Stopped: 3, Would: map[string]int{"forward": 1, "replay": 2, "wait": 1},
				Examples: map[string][]string{"replay": {keyD, keyA}, "wait": {keyA}}},
			{API: "billing", Route: "payout", Observed: 2, Held: 1, Refused: 1, Would: map[string]int{"hold_approval": 1, "refuse_invalid_body": 1},
				Examples: map[string][]string{"hold_approval": {keyB}, "refuse_invalid_body": {keyC}}},
		}}
	if !reflect.DeepEqual(rep, want) {
		t.Errorf("report\n got %+v\nwant %+v", rep, want)
	}

	// Through the API: an agent sees its own scope's observations.
	p := testProxy{apis: []string{"billing"}, scopes: map[string]string{"billing sk_b": macB}}
	srv := httptest.NewServer(New(Options{Journal: j, Proxy: p, Token: "op", AgentToken: "ag"}))
	defer srv.Close()
	var got ObservationReport
	if code := call(t, srv.URL, "GET", "/v1/observations?since="+since.Format(time.RFC3339Nano), "op", "", nil, &got); code != http.StatusOK || got.Observed != 6 {
		t.Errorf("operator: %d, %d observations; want 200, 6", code, got.Observed)
	}
	agent := http.Header{HeaderAgentAPI: {"billing"}, HeaderAgentCredential: {"sk_b"}}
	if code := call(t, srv.URL, "GET", "/v1/observations?since="+since.Format(time.RFC3339), "ag", "", agent, &got); code != http.StatusOK || got.Observed != 2 || len(got.Routes) != 1 {
		t.Errorf("agent: %d, %+v; want its 2 observations of payout", code, got)
	}
	if code := call(t, srv.URL, "GET", "/v1/observations?since=yesterday", "op", "", nil, nil); code != http.StatusBadRequest {
		t.Errorf("bad since: %d, want 400", code)
	}
	c := &Client{BaseURL: srv.URL, Token: "op"}
	if rep, err := c.Observations(context.Background(), time.Since(clock)+time.Hour); err != nil || rep.Observed != 7 {
		t.Errorf("client, since an hour before: %d observations, %v; want all 7", rep.Observed, err)
	}
}

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Time
		err  bool
	}{
		{in: "", want: now.Add(-24 * time.Hour)},
		{in: "90m", want: now.Add(-90 * time.Minute)},
		{in: "2026-04-30T00:00:00Z", want: time.Date(2026, 4, 30, 0, 0, 0, 0, time.UTC)},
		{in: "-1h", err: true},
		{in: "last week", err: true},
	}
	for _, tc := range tests {
		got, err := parseSince(tc.in, now)
		if (err != nil) != tc.err || (!tc.err && !got.Equal(tc.want)) {
			t.Errorf("parseSince(%q) = %v, %v; want %v (error %v)", tc.in, got, err, tc.want, tc.err)
		}
	}
}
