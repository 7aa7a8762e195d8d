package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolguard/toolguard/internal/pgtest"
	"github.com/toolguard/toolguard/journal"
)

// finish records an outcome once: a retry after an unknown commit that
// did commit changes nothing.
func finish(epoch, fence uint64) journal.Mutation {
	return journal.Fenced(epoch, fence, func(cur *journal.Step) (journal.Change, error) {
		if cur.Status == journal.StatusCommitted {
			return journal.Change{}, journal.ErrNoChange
		}
		return commit(epoch, fence, "ok")(cur)
	})
}

// The database connection is cut again and again while writers claim and
// finish keys, retrying what was unavailable and re-reading what is
// unknown: every key ends committed, claimed once, with exactly its two
// events, and the journal checks clean.
func TestOutagesUnderLoad(t *testing.T) {
	j, p := openThroughConns(t, 4)
	const writers, keysEach = 6, 25
	var unavailable, unknown atomic.Int32
	// retry runs op until it is not ErrUnavailable; an ErrCommitUnknown is
	// answered by reread, which says whether the write is in.
	retry := func(op func() error, reread func() (bool, error)) error {
		for {
			err := op()
			switch {
			case errors.Is(err, journal.ErrUnavailable):
				unavailable.Add(1)
				time.Sleep(2 * time.Millisecond) // back off; not synchronisation
				continue
			case errors.Is(err, journal.ErrCommitUnknown):
				unknown.Add(1)
				for {
					in, err := reread()
					if errors.Is(err, journal.ErrUnavailable) {
						time.Sleep(2 * time.Millisecond)
						continue
					}
					if err != nil {
						return err
					}
					if in {
						return nil
					}
					break
				}
				continue
			}
			return err
		}
	}
	// A bounded number of outages, then the database stays up: on a loaded
	// machine (-race, other packages' tests) a 15 ms window can be too short
	// for any reconnect and write to get through, and unbounded cuts kept the
	// writers retrying until the test binary's timeout.
	const outages = 40
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() { // the outages
		defer close(stopped)
		defer p.SetMode(pgtest.Pass)
		for i := 0; i < 2*outages; i++ {
			select {
			case <-done:
				return
			case <-time.After(15 * time.Millisecond):
			}
			if i%2 == 0 {
				p.SetMode(pgtest.Refuse)
			} else {
				p.SetMode(pgtest.Pass)
			}
		}
	}()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range keysEach {
				key := fmt.Sprintf("w%d-k%d", w, k)
				var claimed journal.Step
				err := retry(func() error {
					s, err := j.Apply(context.Background(), key, claim(key, time.Minute))
					claimed = s
					return err
				}, func() (bool, error) {
					s, err := j.Get(key)
					if errors.Is(err, journal.ErrNotFound) {
						return false, nil
					}
					claimed = s
					return err == nil, err
				})
				if err != nil {
					t.Errorf("claim %s: %v", key, err)
					return
				}
				err = retry(func() error {
					_, err := j.Apply(context.Background(), key, finish(claimed.Epoch, claimed.Fence))
					return err
				}, func() (bool, error) {
					s, err := j.Get(key)
					return err == nil && s.Status == journal.StatusCommitted, err
				})
				if err != nil {
					t.Errorf("finish %s: %v", key, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(done)
	<-stopped
	// As a readiness probe would: the journal answers again.
	eventually(t, func() bool { return j.Ping(context.Background()) == nil })
	if unavailable.Load() == 0 {
		t.Fatal("no outage hit a writer: the test did not test anything")
	}
	t.Logf("%d unavailable, %d unknown commits", unavailable.Load(), unknown.Load())
	c, err := j.Count()
	if err != nil {
		t.Fatal(err)
	}
	if c.Steps != writers*keysEach || c.Status[journal.StatusCommitted] != writers*keysEach {
		t.Fatalf("counts %+v, want %d committed steps", c, writers*keysEach)
	}
	evs, err := j.Events(0, 10*writers*keysEach)
	if err != nil {
		t.Fatal(err)
	}
	perKey := map[string][]string{}
	for _, e := range evs {
		perKey[e.Key] = append(perKey[e.Key], fmt.Sprintf("%d:%s", e.KeySeq, e.Type))
	}
	for key, got := range perKey {
		if fmt.Sprint(got) != "[1:started 2:committed]" {
			t.Errorf("events of %s: %v, want one claim and one outcome", key, got)
		}
	}
	mustCheck(t, j)
}
