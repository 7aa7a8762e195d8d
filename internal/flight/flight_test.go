package flight

import (
	"testing"
	"time"

	"github.com/toolguard/toolguard/lifecycle"
)

func TestTable(t *testing.T) {
	t0 := time.Now()
	lease := lifecycle.NewLease(t0, time.Minute)
	after := 10 * time.Second
	end := lease.Until().Add(after) // the flight's last live moment

	tb := NewTable()
	fl, other := tb.Reserve("k", nil, t0, lease, after)
	if fl == nil || other != nil {
		t.Fatalf("Reserve on an empty table = %v, %v; want a new flight", fl, other)
	}
	if fl.Lease() != lease {
		t.Errorf("Lease() is not the lease reserved with")
	}
	if again, other := tb.Reserve("k", fl, t0, lease, after); again != fl || other != nil {
		t.Errorf("Reserve by the owner again = %v, %v; want its own flight", again, other)
	}
	for _, tc := range []struct {
		name      string
		key       string
		now       time.Time
		mine      *Flight
		wantLive  bool
		wantOther bool
	}{
		{name: "live", key: "k", now: t0, wantLive: true, wantOther: true},
		{name: "at its deadline", key: "k", now: end, wantLive: true, wantOther: true},
		{name: "past its deadline", key: "k", now: end.Add(time.Nanosecond)},
		{name: "own flight", key: "k", now: t0, mine: fl, wantLive: true},
		{name: "other key", key: "j", now: t0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tb.Live(tc.key, tc.now) != nil; got != tc.wantLive {
				t.Errorf("Live = %v, want %v", got, tc.wantLive)
			}
			if got := tb.LiveOther(tc.key, tc.now, tc.mine) != nil; got != tc.wantOther {
				t.Errorf("LiveOther = %v, want %v", got, tc.wantOther)
			}
		})
	}

	// A second caller finds the live flight and registers nothing.
	if got, other := tb.Reserve("k", nil, t0, lease, after); got != nil || other != fl {
		t.Errorf("Reserve of a live key = %v, %v; want the live flight as other", got, other)
	}
	// After the deadline the flight is replaced.
	late, other := tb.Reserve("k", nil, end.Add(time.Second), lease, after)
	if late == nil || late == fl || other != nil {
		t.Fatalf("Reserve of an expired key = %v, %v; want a new flight", late, other)
	}
	if n := tb.Count(); n != 1 {
		t.Errorf("Count = %d, want 1", n)
	}
	// Finishing the replaced flight wakes its waiters and leaves the new one.
	tb.Finish("k", fl)
	select {
	case <-fl.Done():
	default:
		t.Error("Done not closed by Finish")
	}
	if n := tb.Count(); n != 1 {
		t.Errorf("Count after finishing the replaced flight = %d, want 1", n)
	}
	tb.Finish("k", late)
	if n := tb.Count(); n != 0 {
		t.Errorf("Count after Finish = %d, want 0", n)
	}
}

func TestRetries(t *testing.T) {
	t0 := time.Now()
	var r Retries
	if r.Since("k", t0.Add(-time.Hour)) {
		t.Fatal("Since on an empty record = true")
	}
	r.Touch("k", t0)
	r.Touch("old", t0.Add(-time.Minute))
	for _, tc := range []struct {
		name   string
		key    string
		cutoff time.Time
		want   bool
	}{
		{name: "before cutoff", key: "k", cutoff: t0.Add(-time.Second), want: true},
		{name: "at cutoff", key: "k", cutoff: t0},
		{name: "unknown key", key: "x", cutoff: t0.Add(-time.Hour)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := r.Since(tc.key, tc.cutoff); got != tc.want {
				t.Errorf("Since(%q, %v) = %v, want %v", tc.key, tc.cutoff, got, tc.want)
			}
		})
	}
	r.Forget(t0.Add(-time.Second))
	if !r.Since("k", t0.Add(-time.Hour)) {
		t.Error("Forget dropped a retry after its cutoff")
	}
	if r.Since("old", t0.Add(-time.Hour)) {
		t.Error("Forget kept a retry before its cutoff")
	}
}
