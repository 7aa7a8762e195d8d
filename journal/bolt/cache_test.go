package bolt

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolguard/toolguard/journal"
)

func TestGetCacheFollowsWrites(t *testing.T) {
	clock := testClock()
	b := mustOpenPath(t, tempPath(t), Options{Now: clock})
	k := benchKey(1)
	st := mustApply(t, b, k, benchStart(k))
	mustApply(t, b, k, benchOutcome(st.Epoch, st.Fence))
	got, err := b.Get(k)
	if err != nil || got.Status != journal.StatusCommitted {
		t.Fatalf("Get = %v, %v; want committed", got.Status, err)
	}
	// A caller changing what it got does not change the cache.
	got.Response.Header.Set("Content-Type", "text/plain")
	got.Response.Body[0] = 'X'
	if again, _ := b.Get(k); again.Response.Header.Get("Content-Type") != "application/json" || again.Response.Body[0] != '{' {
		t.Fatalf("a cached step changed with its copy: %v %q", again.Response.Header, again.Response.Body)
	}
	// A write is seen by the next Get.
	mustApply(t, b, k, transition(journal.StatusCommitted, journal.HoldNeedsReview, false))
	if got, _ := b.Get(k); got.Hold != journal.HoldNeedsReview {
		t.Fatalf("Get after a write = hold %v, want needs_review", got.Hold)
	}
	mustApply(t, b, k, transition(journal.StatusVerified, journal.HoldNone, false))
	if got, _ := b.Get(k); got.Status != journal.StatusVerified || got.Hold != journal.HoldNone {
		t.Fatalf("Get after a write = %v %v, want verified", got.Status, got.Hold)
	}
	// A sweep is seen too.
	if n, _, err := b.Sweep(time.Now().Add(48*time.Hour), 10); err != nil || n != 1 {
		t.Fatalf("Sweep = %d, %v", n, err)
	}
	if _, err := b.Get(k); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("Get after the sweep: %v, want ErrNotFound", err)
	}
}

// TestGetCacheNeverServesOldWrites: while readers fill the cache, every Get
// made after an Apply returned sees that Apply's write.
func TestGetCacheNeverServesOldWrites(t *testing.T) {
	b := mustOpenPath(t, tempPath(t), Options{})
	ctx := context.Background()
	k := benchKey(1)
	if _, err := b.Apply(ctx, k, benchStart(k)); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for !stop.Load() {
				b.Get(k)
			}
		})
	}
	for i := 2; i <= 300; i++ {
		_, err := b.Apply(ctx, k, func(cur *journal.Step) (journal.Change, error) {
			s := *cur
			s.Attempt = i
			s.Response = &journal.Response{Status: http.StatusCreated, BodyHash: "h"}
			return journal.Change{Step: s}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := b.Get(k); err != nil || got.Attempt != i {
			stop.Store(true)
			t.Fatalf("Get after write %d = attempt %d, %v", i, got.Attempt, err)
		}
	}
	stop.Store(true)
	wg.Wait()
}
