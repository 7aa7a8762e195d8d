package bolt

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
)

// TestPing: a writable journal answers a ping with an empty durable
// commit; a read-only or closed one says why it cannot write.
func TestPing(t *testing.T) {
	tests := []struct {
		name string
		open func(t *testing.T) *Journal
		want error
	}{{
		name: "writable",
		open: func(t *testing.T) *Journal { return mustOpen(t) },
	}, {
		name: "read-only",
		open: func(t *testing.T) *Journal {
			path := tempPath(t)
			b, err := Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			b.Close()
			return mustOpenPath(t, path, Options{ReadOnly: true})
		},
		want: journal.ErrReadOnly,
	}, {
		name: "closed",
		open: func(t *testing.T) *Journal {
			b, err := Open(tempPath(t), Options{})
			if err != nil {
				t.Fatal(err)
			}
			b.Close()
			return b
		},
		want: journal.ErrClosed,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.open(t).Ping(context.Background())
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("ping: %v, want %v", err, tc.want)
			}
		})
	}
}

// TestRenewRefusals: Renew checks the caller's context and refuses a
// read-only journal before it looks at the claim.
func TestRenewRefusals(t *testing.T) {
	path := tempPath(t)
	b := mustOpenPath(t, path, Options{})
	st := mustApply(t, b, "a", start("a", ""))
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.Renew(canceled, "a", st.Epoch, st.Fence, time.Minute); !errors.Is(err, context.Canceled) {
		t.Errorf("renew with a canceled context: %v, want context.Canceled", err)
	}
	if err := b.Renew(context.Background(), "a", st.Epoch, st.Fence, time.Minute); err != nil {
		t.Errorf("renew by the owner: %v", err)
	}
	b.Close()
	ro := mustOpenPath(t, path, Options{ReadOnly: true})
	if err := ro.Renew(context.Background(), "a", st.Epoch, st.Fence, time.Minute); !errors.Is(err, journal.ErrReadOnly) {
		t.Errorf("renew on a read-only journal: %v, want ErrReadOnly", err)
	}
}
