package bolt

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
)

// eventString formats the fields of an event that transitions determine.
func eventString(e journal.Event) string {
	return fmt.Sprintf("%s %s %v>%v %v e%d/f%d %s|%s", e.Key, e.Type, e.From, e.To, e.Hold, e.Epoch, e.Fence, e.Reason, e.Note)
}

// stepString formats the fields of a step that transitions determine.
func stepString(s journal.Step) string {
	return fmt.Sprintf("%s %v %v attempt=%d e%d/f%d", s.Key, s.Status, s.Hold, s.Attempt, s.Epoch, s.Fence)
}

func TestApplyTransitions(t *testing.T) {
	errBoom := errors.New("boom")
	noChange := func(*journal.Step) (journal.Change, error) { return journal.Change{}, journal.ErrNoChange }
	withEpoch := func(cur *journal.Step) (journal.Change, error) {
		cur.Epoch, cur.Fence, cur.Status = 99, 99, journal.StatusFailed
		return journal.Change{Step: *cur}, nil
	}
	withNote := func(cur *journal.Step) (journal.Change, error) {
		cur.Hold = journal.HoldNeedsReview
		return journal.Change{Step: *cur, Event: "held", Reason: "effect not visible", Note: "n"}, nil
	}
	change := func(s journal.Step) journal.Mutation {
		return func(*journal.Step) (journal.Change, error) { return journal.Change{Step: s}, nil }
	}
	fail := func(err error) journal.Mutation {
		return func(*journal.Step) (journal.Change, error) { return journal.Change{}, err }
	}

	type op struct {
		m       journal.Mutation
		wantErr error
	}
	tests := []struct {
		name       string
		ops        []op
		wantStep   string // "" when the key must not exist
		wantEvents []string
	}{{
		name:       "create prepared without claim",
		ops:        []op{{m: put(journal.Step{Key: "a", Status: journal.StatusPrepared})}},
		wantStep:   "a prepared  attempt=0 e0/f0",
		wantEvents: []string{"a prepared >prepared  e0/f0 |"},
	}, {
		name:       "create started with claim",
		ops:        []op{{m: start("a", "")}},
		wantStep:   "a started  attempt=1 e1/f1",
		wantEvents: []string{"a started >started  e1/f1 |"},
	}, {
		name: "prepared, started, committed, verified",
		ops: []op{
			{m: put(journal.Step{Key: "a", Status: journal.StatusPrepared})},
			{m: start("a", "")},
			{m: transition(journal.StatusCommitted, journal.HoldNone, false)},
			{m: transition(journal.StatusVerified, journal.HoldNone, false)},
		},
		wantStep: "a verified  attempt=1 e1/f1",
		wantEvents: []string{
			"a prepared >prepared  e0/f0 |",
			"a started prepared>started  e1/f1 |",
			"a committed started>committed  e1/f1 |",
			"a verified committed>verified  e1/f1 |",
		},
	}, {
		name:     "each claim takes a new fence",
		ops:      []op{{m: start("a", "")}, {m: start("a", "")}, {m: start("a", "")}},
		wantStep: "a started  attempt=3 e1/f3",
		wantEvents: []string{
			"a started >started  e1/f1 |",
			"a started started>started  e1/f2 |",
			"a started started>started  e1/f3 |",
		},
	}, {
		name:       "a mutation cannot set epoch and fence without a claim",
		ops:        []op{{m: start("a", "")}, {m: withEpoch}},
		wantStep:   "a failed  attempt=1 e1/f1",
		wantEvents: []string{"a started >started  e1/f1 |", "a failed started>failed  e1/f1 |"},
	}, {
		name:       "hold with event type, reason and note",
		ops:        []op{{m: start("a", "")}, {m: withNote}},
		wantStep:   "a started needs_review attempt=1 e1/f1",
		wantEvents: []string{"a started >started  e1/f1 |", "a held started>started needs_review e1/f1 effect not visible|n"},
	}, {
		name:       "no change writes nothing",
		ops:        []op{{m: start("a", "")}, {m: noChange}},
		wantStep:   "a started  attempt=1 e1/f1",
		wantEvents: []string{"a started >started  e1/f1 |"},
	}, {
		name: "no change on a missing key",
		ops:  []op{{m: noChange, wantErr: journal.ErrNotFound}},
	}, {
		name: "mutation error writes nothing",
		ops:  []op{{m: fail(errBoom), wantErr: errBoom}},
	}, {
		name:       "mutation error keeps the step",
		ops:        []op{{m: start("a", "")}, {m: fail(errBoom), wantErr: errBoom}},
		wantStep:   "a started  attempt=1 e1/f1",
		wantEvents: []string{"a started >started  e1/f1 |"},
	}, {
		name: "invalid changes write nothing",
		ops: []op{
			{m: change(journal.Step{Key: "b", Status: journal.StatusPrepared}), wantErr: journal.ErrInvalidChange},
			{m: change(journal.Step{Key: "", Status: journal.StatusPrepared}), wantErr: journal.ErrInvalidChange},
			{m: change(journal.Step{Key: "a"}), wantErr: journal.ErrInvalidChange},
			{m: change(journal.Step{Key: "a", Status: journal.StatusFailed + 1}), wantErr: journal.ErrInvalidChange},
			{m: change(journal.Step{Key: "a", Status: journal.StatusFailed, Hold: journal.HoldNeedsReview + 1}), wantErr: journal.ErrInvalidChange},
			{m: change(journal.Step{Key: "a", Status: journal.StatusFailed, Workflow: strings.Repeat("w", journal.MaxWorkflowLen+1)}), wantErr: journal.ErrInvalidChange},
			{m: change(journal.Step{Key: "a", Status: journal.StatusCommitted}), wantErr: journal.ErrInvalidChange},
			{m: change(journal.Step{Key: "a", Status: journal.StatusVerified}), wantErr: journal.ErrInvalidChange},
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := mustOpen(t)
			for i, o := range tc.ops {
				_, err := b.Apply(context.Background(), "a", o.m)
				if !errors.Is(err, o.wantErr) || (err != nil) != (o.wantErr != nil) {
					t.Fatalf("op %d: err = %v, want %v", i, err, o.wantErr)
				}
			}
			got, err := b.Get("a")
			if tc.wantStep == "" {
				if !errors.Is(err, journal.ErrNotFound) {
					t.Errorf("get: %v, want ErrNotFound", err)
				}
			} else if err != nil {
				t.Fatal(err)
			} else if stepString(got) != tc.wantStep {
				t.Errorf("step = %q, want %q", stepString(got), tc.wantStep)
			}
			events, err := b.Events(0, 0)
			if err != nil {
				t.Fatal(err)
			}
			var gotEvents []string
			for _, e := range events {
				gotEvents = append(gotEvents, eventString(e))
			}
			if !reflect.DeepEqual(gotEvents, tc.wantEvents) {
				t.Errorf("events:\n got %q\nwant %q", gotEvents, tc.wantEvents)
			}
		})
	}
}

func TestApplyStamps(t *testing.T) {
	b := mustOpen(t)
	s1 := mustApply(t, b, "a", put(journal.Step{Key: "a", Status: journal.StatusPrepared, Schema: 42}))
	if s1.Schema != journal.SchemaVersion || s1.CreatedAt.IsZero() || !s1.CreatedAt.Equal(s1.UpdatedAt) {
		t.Errorf("new step: schema %d created %v updated %v", s1.Schema, s1.CreatedAt, s1.UpdatedAt)
	}
	s2 := mustApply(t, b, "a", transition(journal.StatusStarted, journal.HoldNone, true))
	if !s2.CreatedAt.Equal(s1.CreatedAt) || !s2.UpdatedAt.After(s1.UpdatedAt) {
		t.Errorf("updated step: created %v (want %v), updated %v (want after %v)",
			s2.CreatedAt, s1.CreatedAt, s2.UpdatedAt, s1.UpdatedAt)
	}
	got, err := b.Get("a")
	if err != nil {
		t.Fatal(err)
	}
	got.ReadAt, s2.ReadAt = time.Time{}, time.Time{} // when each was read
	if !reflect.DeepEqual(got, s2) {
		t.Errorf("get = %+v\napply returned %+v", got, s2)
	}
	events, _ := b.Events(0, 0)
	if len(events) != 2 || !events[1].Time.Equal(s2.UpdatedAt) || events[1].Seq != 2 {
		t.Errorf("events = %+v", events)
	}
}

// The mutation gets a private copy: modifying it and returning ErrNoChange
// changes nothing, and Apply returns the stored record.
func TestApplyNoChangeReturnsStoredRecord(t *testing.T) {
	b := mustOpen(t)
	want := mustApply(t, b, "a", put(journal.Step{Key: "a", Status: journal.StatusCommitted, Evidence: "e"}))
	got := mustApply(t, b, "a", func(cur *journal.Step) (journal.Change, error) {
		cur.Status, cur.Evidence = journal.StatusFailed, "scribbled"
		return journal.Change{}, journal.ErrNoChange
	})
	got.ReadAt, want.ReadAt = time.Time{}, time.Time{} // when each was read
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestApplyCanceledContext(t *testing.T) {
	b := mustOpen(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	called := false
	_, err := b.Apply(ctx, "a", func(*journal.Step) (journal.Change, error) { called = true; return journal.Change{}, nil })
	if !errors.Is(err, context.Canceled) || called {
		t.Errorf("err = %v, called = %v; want context.Canceled, not called", err, called)
	}
}

func TestApplyMutationPanic(t *testing.T) {
	b := mustOpen(t)
	func() {
		defer func() {
			v := recover()
			if v == nil || !strings.Contains(fmt.Sprint(v), "kaboom") {
				t.Errorf("recovered %v, want the mutation's panic", v)
			}
		}()
		b.Apply(context.Background(), "a", func(*journal.Step) (journal.Change, error) { panic("kaboom") })
	}()
	// The journal still works and nothing was written.
	mustApply(t, b, "a", start("a", ""))
	if n, _ := b.LastSeq(); n != 1 {
		t.Errorf("last seq = %d, want 1", n)
	}
}

func TestApplyKeyLimits(t *testing.T) {
	b := mustOpen(t)
	for _, key := range []string{"", strings.Repeat("k", journal.MaxKeyLen+1)} {
		_, err := b.Apply(context.Background(), key, put(journal.Step{Key: key, Status: journal.StatusFailed}))
		if !errors.Is(err, journal.ErrInvalidChange) {
			t.Errorf("key of %d bytes: err = %v, want ErrInvalidChange", len(key), err)
		}
	}
	key := strings.Repeat("k", journal.MaxKeyLen)
	mustApply(t, b, key, put(journal.Step{Key: key, Status: journal.StatusFailed, Workflow: strings.Repeat("w", journal.MaxWorkflowLen)}))
}
