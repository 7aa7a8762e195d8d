package bolt

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/journal"
)

// seed writes steps in order (so the last one is the most recently updated).
func seed(t *testing.T, b *Journal, steps ...journal.Step) {
	t.Helper()
	for _, s := range steps {
		if s.Status == journal.StatusCommitted || s.Status == journal.StatusVerified {
			s.Evidence = "test"
		}
		mustApply(t, b, s.Key, put(s))
	}
}

func TestList(t *testing.T) {
	b := mustOpen(t)
	seed(t, b,
		journal.Step{Key: "c", Status: journal.StatusStarted, Workflow: "a"},
		journal.Step{Key: "a", Status: journal.StatusCommitted, Workflow: "ab"},
		journal.Step{Key: "e", Status: journal.StatusStarted, Hold: journal.HoldNeedsReview, Workflow: "a"},
		journal.Step{Key: "b", Status: journal.StatusPrepared, Hold: journal.HoldAwaitingApproval},
		journal.Step{Key: "d", Status: journal.StatusFailed, Hold: journal.HoldNeedsReview},
		journal.Step{Key: "bc", Status: journal.StatusStarted, Workflow: "a"},
	)
	tests := []struct {
		name string
		f    journal.Filter
		want string
	}{
		{name: "all, newest first", f: journal.Filter{}, want: "bc,d,b,e,a,c"},
		{name: "limit", f: journal.Filter{Limit: 2}, want: "bc,d"},
		{name: "status, least recently updated first", f: journal.Filter{Status: journal.StatusStarted}, want: "c,e,bc"},
		{name: "status none", f: journal.Filter{Status: journal.StatusVerified}, want: ""},
		{name: "hold", f: journal.Filter{Hold: journal.HoldNeedsReview}, want: "d,e"},
		{name: "hold set explicitly", f: journal.Filter{Hold: journal.HoldAwaitingApproval, HoldSet: true}, want: "b"},
		{name: "not held", f: journal.Filter{HoldSet: true}, want: "bc,a,c"},
		{name: "not held and started", f: journal.Filter{HoldSet: true, Status: journal.StatusStarted}, want: "c,bc"},
		{name: "workflow a is not ab", f: journal.Filter{Workflow: "a"}, want: "bc,c,e"},
		{name: "workflow ab", f: journal.Filter{Workflow: "ab"}, want: "a"},
		{name: "workflow and hold", f: journal.Filter{Workflow: "a", Hold: journal.HoldNeedsReview}, want: "e"},
		{name: "workflow and status", f: journal.Filter{Workflow: "a", Status: journal.StatusCommitted}, want: ""},
		{name: "hold and status", f: journal.Filter{Hold: journal.HoldNeedsReview, Status: journal.StatusFailed}, want: "d"},
		{name: "hold with limit", f: journal.Filter{Hold: journal.HoldNeedsReview, Limit: 1}, want: "d"},
		{name: "unknown workflow", f: journal.Filter{Workflow: "zz"}, want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			steps, err := b.List(tc.f)
			if err != nil {
				t.Fatal(err)
			}
			if got := stepKeys(steps); got != tc.want {
				t.Errorf("List(%+v) = %s, want %s", tc.f, got, tc.want)
			}
		})
	}
}

// Every write moves the step's index entries; Check (in cleanup) proves no
// stale entry is left, and List proves the new ones exist.
func TestIndexesFollowUpdates(t *testing.T) {
	b := mustOpen(t)
	seed(t, b, journal.Step{Key: "k", Status: journal.StatusPrepared, Hold: journal.HoldAwaitingApproval, Workflow: "w1"})
	steps := []struct {
		name   string
		m      journal.Mutation
		filter journal.Filter
	}{
		{"approve and start", transition(journal.StatusStarted, journal.HoldNone, true), journal.Filter{Status: journal.StatusStarted, HoldSet: true}},
		{"hold for review", transition(journal.StatusStarted, journal.HoldNeedsReview, false), journal.Filter{Hold: journal.HoldNeedsReview}},
		{"move workflow", func(cur *journal.Step) (journal.Change, error) {
			cur.Workflow = "w2"
			return journal.Change{Step: *cur}, nil
		}, journal.Filter{Workflow: "w2"}},
		{"drop workflow and commit", func(cur *journal.Step) (journal.Change, error) {
			cur.Workflow, cur.Status, cur.Hold, cur.Evidence = "", journal.StatusCommitted, journal.HoldNone, "resolved"
			return journal.Change{Step: *cur}, nil
		}, journal.Filter{Status: journal.StatusCommitted}},
	}
	for _, st := range steps {
		mustApply(t, b, "k", st.m)
		got, err := b.List(st.filter)
		if err != nil {
			t.Fatal(err)
		}
		if stepKeys(got) != "k" {
			t.Errorf("%s: List(%+v) = %q, want k", st.name, st.filter, stepKeys(got))
		}
		if errs := b.Check(); len(errs) > 0 {
			t.Errorf("%s: check: %v", st.name, errs)
		}
	}
	for _, f := range []journal.Filter{{Workflow: "w1"}, {Workflow: "w2"}, {Hold: journal.HoldNeedsReview}, {Status: journal.StatusStarted}} {
		if got, _ := b.List(f); len(got) != 0 {
			t.Errorf("List(%+v) = %s, want nothing", f, stepKeys(got))
		}
	}
}

func TestCount(t *testing.T) {
	b := mustOpen(t)
	seed(t, b,
		journal.Step{Key: "a", Status: journal.StatusStarted},
		journal.Step{Key: "b", Status: journal.StatusStarted, Hold: journal.HoldNeedsReview},
		journal.Step{Key: "c", Status: journal.StatusPrepared, Hold: journal.HoldAwaitingApproval},
	)
	mustApply(t, b, "a", transition(journal.StatusCommitted, journal.HoldNone, false))
	got, err := b.Count()
	if err != nil {
		t.Fatal(err)
	}
	want := journal.Counts{
		Steps: 3,
		Status: map[journal.Status]int{journal.StatusPrepared: 1, journal.StatusStarted: 1, journal.StatusCommitted: 1,
			journal.StatusVerified: 0, journal.StatusFailed: 0},
		Hold: map[journal.Hold]int{journal.HoldNone: 1, journal.HoldAwaitingApproval: 1, journal.HoldNeedsReview: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Count() = %+v, want %+v", got, want)
	}
}

func TestEvents(t *testing.T) {
	b := mustOpen(t)
	for i := range 25 {
		mustApply(t, b, keyN(i%5), start(keyN(i%5), ""))
	}
	last, err := b.LastSeq()
	if err != nil || last != 25 {
		t.Fatalf("LastSeq() = %d, %v; want 25", last, err)
	}
	tests := []struct {
		after     uint64
		limit     int
		wantN     int
		wantFirst uint64
	}{
		{after: 0, limit: 0, wantN: 25, wantFirst: 1},
		{after: 0, limit: 10, wantN: 10, wantFirst: 1},
		{after: 10, limit: 10, wantN: 10, wantFirst: 11},
		{after: 20, limit: 10, wantN: 5, wantFirst: 21},
		{after: 25, limit: 10, wantN: 0},
		{after: ^uint64(0), limit: 10, wantN: 0},
	}
	for _, tc := range tests {
		events, err := b.Events(tc.after, tc.limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(events) != tc.wantN {
			t.Errorf("Events(%d, %d): %d events, want %d", tc.after, tc.limit, len(events), tc.wantN)
			continue
		}
		for i, e := range events {
			if e.Seq != tc.wantFirst+uint64(i) {
				t.Errorf("Events(%d, %d)[%d].Seq = %d, want %d", tc.after, tc.limit, i, e.Seq, tc.wantFirst+uint64(i))
			}
		}
	}
}

func TestLastSeqEmpty(t *testing.T) {
	b := mustOpen(t)
	if n, err := b.LastSeq(); n != 0 || err != nil {
		t.Errorf("LastSeq() = %d, %v; want 0, nil", n, err)
	}
	if ev, err := b.Events(0, 0); ev != nil || err != nil {
		t.Errorf("Events() = %v, %v; want nil, nil", ev, err)
	}
	_, err := b.Apply(context.Background(), "x", func(*journal.Step) (journal.Change, error) { return journal.Change{}, journal.ErrNoChange })
	if err == nil {
		t.Error("no change on a missing key: want ErrNotFound")
	}
}

func TestByTimeMergesStatuses(t *testing.T) {
	b := mustOpen(t)
	seed(t, b,
		journal.Step{Key: "c", Status: journal.StatusStarted},
		journal.Step{Key: "a", Status: journal.StatusCommitted},
		journal.Step{Key: "e", Status: journal.StatusFailed},
		journal.Step{Key: "b", Status: journal.StatusPrepared},
		journal.Step{Key: "d", Status: journal.StatusCommitted},
	)
	mustApply(t, b, "c", transition(journal.StatusFailed, journal.HoldNone, false)) // now the newest
	for _, tc := range []struct {
		statuses []journal.Status
		newest   bool
		want     string
	}{
		{allStatuses, true, "c,d,b,e,a"},
		{allStatuses, false, "a,e,b,d,c"},
		{finishedStatuses, false, "a,e,d,c"},
		{[]journal.Status{journal.StatusStarted}, false, ""},
	} {
		var got []string
		err := b.view("walk", func(bk *buckets) error {
			return bk.byTime(tc.statuses, tc.newest, func(_, key []byte) (bool, error) {
				got = append(got, string(key))
				return true, nil
			})
		})
		if err != nil || strings.Join(got, ",") != tc.want {
			t.Errorf("byTime(%v, newest=%v) = %v, %v; want %s", tc.statuses, tc.newest, got, err, tc.want)
		}
	}
}
