package metrics

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
	"github.com/toolguard/toolguard/lifecycle"
	"github.com/toolguard/toolguard/policy"
	"github.com/toolguard/toolguard/rules"
)

// page is the metrics page m serves.
func page(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("metrics page: %d", rec.Code)
	}
	return rec.Body.String()
}

// counts is a Counter with fixed counts.
type counts struct {
	c   journal.OpenCounts
	err error
}

func (c counts) CountOpen() (journal.OpenCounts, error) { return c.c, c.err }

type size int64

func (s size) Size() int64 { return int64(s) }

// TestRecord: every method records the sample operations.md names.
func TestRecord(t *testing.T) {
	m := New()
	m.PassedThrough()
	m.Request("stripe", "charge", OutcomeForwarded)
	m.Observed("stripe", "charge", journal.WouldForward)
	m.UpstreamCall("stripe", "charge", 20*time.Millisecond)
	m.Recovery(lifecycle.StrategyLookup, "found")
	m.Verification("verified")
	m.Reject("egress")
	m.Refused("unmatched")
	m.Refused("")
	m.TruncatedResponse()
	m.Swept(3)
	m.Expired(2)
	m.JournalWriteFailed()
	m.ObserveCommit(time.Millisecond, 4)
	got := page(t, m)
	for _, want := range []string{
		`toolguard_requests_total{api="",outcome="passthrough",route=""} 1`,
		`toolguard_requests_total{api="stripe",outcome="forwarded",route="charge"} 1`,
		`toolguard_requests_total{api="",outcome="blocked",route=""} 2`,
		`toolguard_observed_total{api="stripe",route="charge",would="forward"} 1`,
		`toolguard_upstream_duration_seconds_count{api="stripe",route="charge"} 1`,
		`toolguard_recoveries_total{result="found",strategy="lookup"} 1`,
		`toolguard_recoveries_total{result="held",strategy="none"} 0`,
		`toolguard_verifications_total{result="verified"} 1`,
		`toolguard_rejected_total{reason="egress"} 1`,
		`toolguard_rejected_total{reason="unmatched"} 1`,
		`toolguard_rejected_total{reason="too_many_holds"} 0`,
		`toolguard_responses_truncated_total 1`,
		`toolguard_sweeper_removed_total 3`,
		`toolguard_holds_expired_total 2`,
		`toolguard_journal_write_failures_total 1`,
		`toolguard_journal_commit_batch_size_count 1`,
	} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("no %s in the metrics page", want)
		}
	}
	if m.Registerer() == nil {
		t.Error("no registerer")
	}
}

// TestPrecreateRoutes: every guarded route's request counters exist at
// zero, and the observation counters of a route in observe mode.
func TestPrecreateRoutes(t *testing.T) {
	m := New()
	observe := policy.ModeObserve
	api := &rules.API{Name: "stripe", Mode: &observe}
	api.Routes = []*rules.Route{
		{Name: "charge", Effect: rules.EffectIrreversible, API: api},
		{Name: "read", Effect: rules.EffectSafe, API: api},
	}
	m.PrecreateRoutes(&rules.Set{APIs: []*rules.API{api}}, policy.ModeEnforce)
	got := page(t, m)
	for _, want := range []string{
		`toolguard_requests_total{api="stripe",outcome="replayed",route="charge"} 0`,
		`toolguard_requests_total{api="stripe",outcome="observed",route="charge"} 0`,
		`toolguard_observed_total{api="stripe",route="charge",would="hold_approval"} 0`,
	} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("no %s in the metrics page", want)
		}
	}
	if strings.Contains(got, `route="read"`) {
		t.Error("a read route has request counters")
	}
}

// TestWatchState: the gauges read their sources at scrape time.
func TestWatchState(t *testing.T) {
	m := New()
	c := counts{c: journal.OpenCounts{Held: map[journal.Hold]int{journal.HoldNeedsReview: 2}}}
	m.WatchState(func() int { return 5 }, c, size(4096))
	got := page(t, m)
	for _, want := range []string{
		`toolguard_in_flight_calls 5`,
		`toolguard_held_steps{hold="needs_review"} 2`,
		`toolguard_held_steps{hold="awaiting_approval"} 0`,
		`toolguard_journal_size_bytes 4096`,
	} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("no %s in the metrics page", want)
		}
	}
}

// TestNil: a nil *Metrics records nothing and does not panic.
func TestNil(t *testing.T) {
	var m *Metrics
	m.PassedThrough()
	m.Request("a", "r", OutcomeBlocked)
	m.Observed("a", "r", journal.WouldForward)
	m.UpstreamCall("a", "r", time.Second)
	m.Recovery(lifecycle.StrategyNone, "held")
	m.Verification("verified")
	m.Reject("egress")
	m.Refused("egress")
	m.TruncatedResponse()
	m.Swept(1)
	m.Expired(1)
	m.JournalWriteFailed()
	m.ObserveCommit(time.Second, 1)
	m.PrecreateRoutes(&rules.Set{}, policy.ModeEnforce)
	m.WatchState(func() int { return 0 }, counts{}, nil)
	if m.Registerer() != nil {
		t.Error("a nil *Metrics has a registerer")
	}
	if got := RejectReasons(); len(got) == 0 {
		t.Error("no reject reasons")
	}
}
