package retention

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolguard/toolguard/metrics"
)

// batches is a journal whose Sweep and ExpireHolds return the scripted
// batches in order (then nothing), recording the cutoffs they were given.
type batches struct {
	sweeps, expiries []batch
	swept, expired   int
	cutoffs          []time.Time
}

type batch struct {
	n    int
	more bool
	err  error
}

func (b *batches) Sweep(cutoff time.Time, limit int) (int, bool, error) {
	return b.next(&b.sweeps, &b.swept, cutoff, limit)
}

func (b *batches) ExpireHolds(cutoff time.Time, limit int) (int, bool, error) {
	return b.next(&b.expiries, &b.expired, cutoff, limit)
}

func (b *batches) next(script *[]batch, calls *int, cutoff time.Time, limit int) (int, bool, error) {
	*calls++
	b.cutoffs = append(b.cutoffs, cutoff)
	if limit != Batch {
		panic("batch limit")
	}
	if len(*script) == 0 {
		return 0, false, nil
	}
	x := (*script)[0]
	*script = (*script)[1:]
	return x.n, x.more, x.err
}

func TestPass(t *testing.T) {
	boom := errors.New("disk gone")
	for _, tc := range []struct {
		name                    string
		retention, expiry       time.Duration
		sweeps, expiries        []batch
		wantSwept, wantExpired  int // batches called
		wantRemoved, wantExpire float64
		wantLog                 string
	}{
		{name: "nothing kept forever", wantLog: ""},
		{name: "one batch each", retention: time.Hour, expiry: time.Hour,
			sweeps: []batch{{n: 3}}, expiries: []batch{{n: 2}}, wantSwept: 1, wantExpired: 1, wantRemoved: 3, wantExpire: 2,
			wantLog: "removed=3"},
		{name: "batches until no more", retention: time.Hour,
			sweeps: []batch{{n: Batch, more: true}, {n: Batch, more: true}, {n: 7}}, wantSwept: 3, wantRemoved: 2*Batch + 7,
			wantLog: "retention sweep"},
		// Regression: a pass repeated Sweep for as long as it said more, so
		// a bbolt journal whose oldest finished steps were all to be kept
		// had it rescan them in a tight loop. A batch that removes nothing
		// ends the pass; the next tick tries again.
		{name: "a batch without progress ends the pass", retention: time.Hour, expiry: time.Hour,
			sweeps: []batch{{n: 0, more: true}, {n: 0, more: true}}, expiries: []batch{{n: 0, more: true}},
			wantSwept: 1, wantExpired: 1},
		{name: "an error ends the pass and is logged", retention: time.Hour,
			sweeps: []batch{{n: 4, more: true}, {err: boom}, {n: 1}}, wantSwept: 2, wantRemoved: 4, wantLog: "disk gone"},
		{name: "expiry only", expiry: time.Minute,
			expiries: []batch{{n: 1}}, wantExpired: 1, wantExpire: 1, wantLog: "expired unapproved"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := &batches{sweeps: tc.sweeps, expiries: tc.expiries}
			var logs bytes.Buffer
			m := metrics.New()
			s := &Sweeper{Journal: j, Retention: tc.retention, HoldExpiry: tc.expiry, Metrics: m, Log: slog.New(slog.NewTextHandler(&logs, nil))}
			before := time.Now()
			s.Pass(context.Background())
			if j.swept != tc.wantSwept || j.expired != tc.wantExpired {
				t.Errorf("batches: %d sweeps, %d expiries; want %d, %d", j.swept, j.expired, tc.wantSwept, tc.wantExpired)
			}
			if got := counter(t, m, "toolguard_sweeper_removed_total"); got != tc.wantRemoved {
				t.Errorf("toolguard_sweeper_removed_total %v, want %v", got, tc.wantRemoved)
			}
			if got := counter(t, m, "toolguard_holds_expired_total"); got != tc.wantExpire {
				t.Errorf("toolguard_holds_expired_total %v, want %v", got, tc.wantExpire)
			}
			for _, c := range j.cutoffs {
				if c.After(before) || c.Before(before.Add(-2*time.Hour)) {
					t.Errorf("cutoff %v, not within the durations before %v", c, before)
				}
			}
			if tc.wantLog == "" && logs.Len() > 0 {
				t.Errorf("unexpected log: %s", logs.String())
			}
			if !strings.Contains(logs.String(), tc.wantLog) {
				t.Errorf("log %q does not mention %q", logs.String(), tc.wantLog)
			}
		})
	}
}

// counter reads a counter without labels from m's exposition.
func counter(t *testing.T, m *metrics.Metrics, name string) float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	sc := bufio.NewScanner(rec.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatalf("no %s in the exposition", name)
	return 0
}

// signalling is a journal whose every Sweep reports on passes.
type signalling struct{ passes chan struct{} }

func (s signalling) Sweep(time.Time, int) (int, bool, error) {
	s.passes <- struct{}{}
	return 0, false, nil
}

func (s signalling) ExpireHolds(time.Time, int) (int, bool, error) { return 0, false, nil }

// Run passes at once, then every interval, and returns when its context
// ends.
func TestRunPassesUntilCancelled(t *testing.T) {
	j := signalling{passes: make(chan struct{})}
	s := &Sweeper{Journal: j, Retention: time.Hour}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx, time.Millisecond); close(done) }()
	for range 3 {
		select {
		case <-j.passes:
		case <-time.After(10 * time.Second):
			t.Fatal("no pass within 10s")
		}
	}
	cancel()
	for {
		select {
		case <-j.passes: // a pass that started before the cancel
		case <-done:
			return
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return after its context ended")
		}
	}
}

func TestInterval(t *testing.T) {
	for _, tc := range []struct {
		retention, expiry, want time.Duration
	}{
		{0, 0, time.Minute},
		{time.Hour, 0, time.Minute},
		{0, 30 * time.Second, 3 * time.Second},
		{time.Hour, 5 * time.Second, time.Second},
	} {
		s := &Sweeper{Retention: tc.retention, HoldExpiry: tc.expiry}
		if got := s.Interval(); got != tc.want {
			t.Errorf("Interval(%v, %v) = %v, want %v", tc.retention, tc.expiry, got, tc.want)
		}
		if s.Enabled() != (tc.retention > 0 || tc.expiry > 0) {
			t.Errorf("Enabled(%v, %v) = %v", tc.retention, tc.expiry, s.Enabled())
		}
	}
}
