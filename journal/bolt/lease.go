package bolt

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/bbolt"

	"github.com/toolguard/toolguard/journal"
)

// Renew extends the lease of a step that the caller still owns by its
// claim (epoch, fence): a started step (its call is in flight) or a
// committed one whose verification is pending (its verifier is probing).
// bbolt keeps leases in the process (a journal file has one writer), so
// Renew writes nothing: it only checks that the claim is still the step's,
// and returns a *FencedError (wrapping ErrFenced) when it is not, or when
// the step has nothing left to lease.
func (b *Journal) Renew(ctx context.Context, key string, epoch, fence uint64, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("renew lease of %s: %w", key, err)
	}
	if b.readOnly {
		return fmt.Errorf("renew lease of %s: %w", key, journal.ErrReadOnly)
	}
	st, err := b.Get(key)
	if errors.Is(err, journal.ErrNotFound) {
		return &journal.FencedError{Key: key, HeldEpoch: epoch, HeldFence: fence, Missing: true}
	}
	if err != nil {
		return fmt.Errorf("renew lease of %s: %w", key, err)
	}
	if st.Epoch != epoch || st.Fence != fence || !st.Leasable() {
		return &journal.FencedError{Key: key, HeldEpoch: epoch, HeldFence: fence, Epoch: st.Epoch, Fence: st.Fence}
	}
	return nil
}

// Watch returns a channel that receives a value after a commit that
// changed key's step, and a function that stops the watch. It is a wake-up
// hint only: signals coalesce (the channel holds one), and a watcher that
// must not miss a change reads the step again after each wake-up and polls.
func (b *Journal) Watch(key string) (<-chan struct{}, func()) {
	return b.watch.add(key)
}

// watchers are the channels of Watch by key.
type watchers struct {
	mu sync.Mutex
	m  map[string]map[chan struct{}]struct{}
}

func (w *watchers) add(key string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	if w.m == nil {
		w.m = map[string]map[chan struct{}]struct{}{}
	}
	set := w.m[key]
	if set == nil {
		set = map[chan struct{}]struct{}{}
		w.m[key] = set
	}
	set[ch] = struct{}{}
	w.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			delete(w.m[key], ch)
			if len(w.m[key]) == 0 {
				delete(w.m, key)
			}
		})
	}
}

// signal wakes every watcher of key without blocking.
func (w *watchers) signal(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch := range w.m[key] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Ping reports whether the journal can write now: it commits an empty
// write transaction, which bbolt writes and fsyncs like any other (its
// meta page), so a full disk or a failing device answers an error wrapping
// ErrUnavailable. The proxy calls it only while it is not ready, to learn
// that the journal has recovered.
func (b *Journal) Ping(ctx context.Context) error {
	if b.closed.Load() {
		return fmt.Errorf("ping journal %s: %w", b.path, journal.ErrClosed)
	}
	if b.readOnly {
		return fmt.Errorf("ping journal %s: %w", b.path, journal.ErrReadOnly)
	}
	if err := b.update(func(*bbolt.Tx) error { return nil }); err != nil {
		return fmt.Errorf("ping journal %s: %w: %w", b.path, journal.ErrUnavailable, err)
	}
	return nil
}
