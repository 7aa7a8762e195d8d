package bolt

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/toolguard/toolguard/journal"
)

func TestFenced(t *testing.T) {
	commit := transition(journal.StatusCommitted, journal.HoldNone, false)
	tests := []struct {
		name string
		// setup returns the claim the stale or current owner holds.
		setup   func(t *testing.T, path string) (epoch, fence uint64, b *Journal)
		wantErr bool
	}{{
		name: "current owner",
		setup: func(t *testing.T, path string) (uint64, uint64, *Journal) {
			b := mustOpenPath(t, path, Options{})
			s := mustApply(t, b, "a", start("a", ""))
			return s.Epoch, s.Fence, b
		},
	}, {
		name: "claim taken over in the same epoch",
		setup: func(t *testing.T, path string) (uint64, uint64, *Journal) {
			b := mustOpenPath(t, path, Options{})
			s := mustApply(t, b, "a", start("a", ""))
			mustApply(t, b, "a", start("a", ""))
			return s.Epoch, s.Fence, b
		},
		wantErr: true,
	}, {
		name: "claim of a dead epoch",
		setup: func(t *testing.T, path string) (uint64, uint64, *Journal) {
			old, err := Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			s := mustApply(t, old, "a", start("a", ""))
			old.Close()
			b := mustOpenPath(t, path, Options{})
			// The new epoch claims the step again (recovery): fence changes too.
			mustApply(t, b, "a", transition(journal.StatusStarted, journal.HoldNone, true))
			return s.Epoch, s.Fence, b
		},
		wantErr: true,
	}, {
		name: "same fence, other epoch",
		setup: func(t *testing.T, path string) (uint64, uint64, *Journal) {
			b := mustOpenPath(t, path, Options{})
			s := mustApply(t, b, "a", start("a", ""))
			return s.Epoch + 1, s.Fence, b
		},
		wantErr: true,
	}, {
		name: "step gone",
		setup: func(t *testing.T, path string) (uint64, uint64, *Journal) {
			return 1, 1, mustOpenPath(t, path, Options{})
		},
		wantErr: true,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			epoch, fence, b := tc.setup(t, tempPath(t))
			var logs bytes.Buffer
			b.log = slog.New(slog.NewTextHandler(&logs, nil))
			before, _ := b.Get("a")
			seq, _ := b.LastSeq()
			called := false
			_, err := b.Apply(context.Background(), "a", journal.Fenced(epoch, fence, func(cur *journal.Step) (journal.Change, error) {
				called = true
				return commit(cur)
			}))
			if !tc.wantErr {
				if err != nil || !called {
					t.Fatalf("err = %v, called = %v; want nil, called", err, called)
				}
				return
			}
			var fe *journal.FencedError
			if !errors.Is(err, journal.ErrFenced) || !errors.As(err, &fe) || called {
				t.Fatalf("err = %v, called = %v; want ErrFenced, not called", err, called)
			}
			if fe.Key != "a" || fe.HeldEpoch != epoch || fe.HeldFence != fence ||
				fe.Fence != before.Fence || fe.Epoch != before.Epoch {
				t.Errorf("FencedError = %+v; step had epoch %d fence %d", fe, before.Epoch, before.Fence)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "step a: fenced: ") {
				t.Errorf("message %q, want it to start with the key", msg)
			}
			after, _ := b.Get("a")
			if after.Status != before.Status || !after.UpdatedAt.Equal(before.UpdatedAt) {
				t.Errorf("step changed: %+v -> %+v", before, after)
			}
			if got, _ := b.LastSeq(); got != seq {
				t.Errorf("last seq %d -> %d: an event was written", seq, got)
			}
			l := logs.String()
			if !strings.Contains(l, "level=WARN") || !strings.Contains(l, "key=a") || !strings.Contains(l, "held_fence=") {
				t.Errorf("log = %q, want a warning with key and fences", l)
			}
		})
	}
}
