package journal

import (
	"errors"
	"strings"
	"testing"
)

// TestFencedMutation: a fenced mutation runs only on the record of the
// claim it was given; otherwise it returns a *FencedError naming both
// claims (or the missing step) without calling the wrapped mutation.
func TestFencedMutation(t *testing.T) {
	owned := &Step{Key: "k", Status: StatusStarted, Epoch: 2, Fence: 7}
	tests := []struct {
		name         string
		epoch, fence uint64
		cur          *Step
		wantCall     bool
		wantErr      string // a substring of the FencedError; "" for none
	}{
		{name: "current owner", epoch: 2, fence: 7, cur: owned, wantCall: true},
		{name: "older fence", epoch: 2, fence: 6, cur: owned, wantErr: "held epoch 2 fence 6, current epoch 2 fence 7"},
		{name: "older epoch", epoch: 1, fence: 7, cur: owned, wantErr: "held epoch 1 fence 7, current epoch 2 fence 7"},
		{name: "step gone", epoch: 2, fence: 7, wantErr: "held epoch 2 fence 7, step no longer exists"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			called := false
			m := Fenced(tc.epoch, tc.fence, func(cur *Step) (Change, error) {
				called = true
				return Change{Step: *cur}, nil
			})
			var cur *Step
			if tc.cur != nil {
				c := *tc.cur
				cur = &c
			}
			_, err := m(cur)
			if called != tc.wantCall {
				t.Errorf("wrapped mutation called = %v, want %v", called, tc.wantCall)
			}
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("err = %v, want none", err)
				}
				return
			}
			var fe *FencedError
			if !errors.Is(err, ErrFenced) || !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want a FencedError saying %q", err, tc.wantErr)
			}
			if fe.HeldEpoch != tc.epoch || fe.HeldFence != tc.fence || fe.Missing != (tc.cur == nil) {
				t.Errorf("FencedError = %+v", fe)
			}
		})
	}
}
