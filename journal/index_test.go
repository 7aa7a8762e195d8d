package journal

import (
	"context"
	"reflect"
	"strings"
	"testing"
)

// seed writes steps in order (so the last one is the most recently updated).
func seed(t *testing.T, b *Bolt, steps ...Step) {
	t.Helper()
	for _, s := range steps {
		if s.Status == StatusCommitted || s.Status == StatusVerified {
			s.Evidence = "test"
		}
		mustApply(t, b, s.Key, put(s))
	}
}

func TestList(t *testing.T) {
	b := mustOpen(t)
	seed(t, b,
		Step{Key: "c", Status: StatusStarted, Workflow: "a"},
		Step{Key: "a", Status: StatusCommitted, Workflow: "ab"},
		Step{Key: "e", Status: StatusStarted, Hold: HoldNeedsReview, Workflow: "a"},
		Step{Key: "b", Status: StatusPrepared, Hold: HoldAwaitingApproval},
		Step{Key: "d", Status: StatusFailed, Hold: HoldNeedsReview},
		Step{Key: "bc", Status: StatusStarted, Workflow: "a"},
	)
	tests := []struct {
		name string
		f    Filter
		want string
	}{
		{name: "all, newest first", f: Filter{}, want: "bc,d,b,e,a,c"},
		{name: "limit", f: Filter{Limit: 2}, want: "bc,d"},
		{name: "status, least recently updated first", f: Filter{Status: StatusStarted}, want: "c,e,bc"},
		{name: "status none", f: Filter{Status: StatusVerified}, want: ""},
		{name: "hold", f: Filter{Hold: HoldNeedsReview}, want: "d,e"},
		{name: "hold set explicitly", f: Filter{Hold: HoldAwaitingApproval, HoldSet: true}, want: "b"},
		{name: "not held", f: Filter{HoldSet: true}, want: "bc,a,c"},
		{name: "not held and started", f: Filter{HoldSet: true, Status: StatusStarted}, want: "c,bc"},
		{name: "workflow a is not ab", f: Filter{Workflow: "a"}, want: "bc,c,e"},
		{name: "workflow ab", f: Filter{Workflow: "ab"}, want: "a"},
		{name: "workflow and hold", f: Filter{Workflow: "a", Hold: HoldNeedsReview}, want: "e"},
		{name: "workflow and status", f: Filter{Workflow: "a", Status: StatusCommitted}, want: ""},
		{name: "hold and status", f: Filter{Hold: HoldNeedsReview, Status: StatusFailed}, want: "d"},
		{name: "hold with limit", f: Filter{Hold: HoldNeedsReview, Limit: 1}, want: "d"},
		{name: "unknown workflow", f: Filter{Workflow: "zz"}, want: ""},
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
	seed(t, b, Step{Key: "k", Status: StatusPrepared, Hold: HoldAwaitingApproval, Workflow: "w1"})
	steps := []struct {
		name   string
		m      Mutation
		filter Filter
	}{
		{"approve and start", transition(StatusStarted, HoldNone, true), Filter{Status: StatusStarted, HoldSet: true}},
		{"hold for review", transition(StatusStarted, HoldNeedsReview, false), Filter{Hold: HoldNeedsReview}},
		{"move workflow", func(cur *Step) (Change, error) {
			cur.Workflow = "w2"
			return Change{Step: *cur}, nil
		}, Filter{Workflow: "w2"}},
		{"drop workflow and commit", func(cur *Step) (Change, error) {
			cur.Workflow, cur.Status, cur.Hold, cur.Evidence = "", StatusCommitted, HoldNone, "resolved"
			return Change{Step: *cur}, nil
		}, Filter{Status: StatusCommitted}},
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
	for _, f := range []Filter{{Workflow: "w1"}, {Workflow: "w2"}, {Hold: HoldNeedsReview}, {Status: StatusStarted}} {
		if got, _ := b.List(f); len(got) != 0 {
			t.Errorf("List(%+v) = %s, want nothing", f, stepKeys(got))
		}
	}
}

func TestCount(t *testing.T) {
	b := mustOpen(t)
	seed(t, b,
		Step{Key: "a", Status: StatusStarted},
		Step{Key: "b", Status: StatusStarted, Hold: HoldNeedsReview},
		Step{Key: "c", Status: StatusPrepared, Hold: HoldAwaitingApproval},
	)
	mustApply(t, b, "a", transition(StatusCommitted, HoldNone, false))
	got, err := b.Count()
	if err != nil {
		t.Fatal(err)
	}
	want := Counts{
		Steps: 3,
		Status: map[Status]int{StatusPrepared: 1, StatusStarted: 1, StatusCommitted: 1,
			StatusVerified: 0, StatusFailed: 0},
		Hold: map[Hold]int{HoldNone: 1, HoldAwaitingApproval: 1, HoldNeedsReview: 1},
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
	_, err := b.Apply(context.Background(), "x", func(*Step) (Change, error) { return Change{}, ErrNoChange })
	if err == nil {
		t.Error("no change on a missing key: want ErrNotFound")
	}
}

func TestByTimeMergesStatuses(t *testing.T) {
	b := mustOpen(t)
	seed(t, b,
		Step{Key: "c", Status: StatusStarted},
		Step{Key: "a", Status: StatusCommitted},
		Step{Key: "e", Status: StatusFailed},
		Step{Key: "b", Status: StatusPrepared},
		Step{Key: "d", Status: StatusCommitted},
	)
	mustApply(t, b, "c", transition(StatusFailed, HoldNone, false)) // now the newest
	for _, tc := range []struct {
		statuses []Status
		newest   bool
		want     string
	}{
		{allStatuses, true, "c,d,b,e,a"},
		{allStatuses, false, "a,e,b,d,c"},
		{finishedStatuses, false, "a,e,d,c"},
		{[]Status{StatusStarted}, false, ""},
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
