package bolt

// Group commit.
//
// An fsync costs about half a millisecond and is the journal's whole write
// budget, so concurrent Applies share commits. There is no timer (bbolt's
// db.Batch waits up to MaxBatchDelay, 10 ms by default, even when a single
// caller is writing). Instead one committer goroutine per writable journal
// loops:
//
//   - A caller appends its request to the queue and, if the committer is
//     idle, wakes it; then it sleeps until its request is answered.
//   - The committer takes everything queued (up to maxBatch), runs the
//     mutations in queue order inside one write transaction, commits once
//     and answers every request of the batch.
//   - Requests that arrived during the commit wait in the queue; the
//     committer takes them as the next batch at once, and goes idle only
//     when the queue is empty.
//
// At concurrency 1 every Apply is its own batch and pays one commit; under
// load, batches grow to the number of waiting callers. A committer of its
// own, rather than a leader elected among the callers, means no hand-off
// between batches: a woken caller would first have to be scheduled, and
// under load that wait is paid by every request queued behind it.
//
// Nothing is ever retried. bbolt's Batch re-runs the functions of a failed
// batch one by one, which is harmless for pure functions but not for ours: a
// Mutation's answer is a decision its caller acts on (for instance "you own
// this step: send the request"), it may record that decision outside the
// transaction, and the contract says it runs exactly once. A mutation's own
// error never fails the transaction here, so there is nothing to isolate by
// retrying; and a failed commit (I/O error, full disk) would most likely
// fail again. So when the commit fails, every caller of the batch gets the
// error and nothing of the batch is written.

import (
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"go.etcd.io/bbolt"

	"github.com/toolguard/toolguard/journal"
)

// maxBatch bounds the number of requests in one transaction.
const maxBatch = 1024

// request is one Apply waiting in the queue.
type request struct {
	key  string
	m    journal.Mutation
	done chan struct{} // closed when the result is set

	// Result, set by the committer before done is closed.
	step  journal.Step
	err   error
	panic *panicError
	// wrote is set when the request's change is part of the commit;
	// written and ref are then the step as written and where (recent.go).
	wrote   bool
	written journal.Step
	ref     stepRef
}

// errNothingWritten rolls back a batch in which no request wrote, saving
// the commit and its fsync.
var errNothingWritten = errors.New("nothing written")

// submit queues r and returns once r has its result; false means the
// journal is closed and r was not queued.
func (b *Journal) submit(r *request) bool {
	b.mu.Lock()
	if b.shut {
		b.mu.Unlock()
		return false
	}
	b.queue = append(b.queue, r)
	wake := !b.busy
	b.busy = true
	b.mu.Unlock()
	if wake {
		b.kick <- struct{}{}
	}
	<-r.done
	return true
}

// committer commits batches taken from the head of the queue until it is
// empty, then waits to be kicked again; it returns when kick is closed.
func (b *Journal) committer() {
	defer close(b.stopped)
	for range b.kick {
		for {
			b.mu.Lock()
			n := min(len(b.queue), maxBatch)
			if n == 0 {
				b.queue = nil
				b.busy = false
				b.idle.Broadcast()
				b.mu.Unlock()
				break
			}
			batch := b.queue[:n:n]
			b.queue = b.queue[n:]
			b.mu.Unlock()
			b.commit(batch)
		}
	}
}

// commit applies batch in one transaction and answers every request.
func (b *Journal) commit(batch []*request) {
	answered := false
	defer func() {
		if answered {
			return
		}
		// A panic outside any mutation (a bug here, or bbolt on a damaged
		// page): answer everyone so that no caller waits forever. bbolt
		// rolled the transaction back; the committer goes on.
		v := recover()
		b.log.Error("journal: commit aborted by a panic; nothing of the batch was written",
			"panic", fmt.Sprint(v), "batch", len(batch), "stack", string(debug.Stack()))
		for _, r := range batch {
			r.step, r.err = journal.Step{}, fmt.Errorf("apply step %s: journal commit aborted: %v", r.key, v)
			close(r.done)
		}
	}()
	start := time.Now()
	keys := make([]string, len(batch))
	for i, r := range batch {
		keys[i] = r.key
	}
	b.cache.begin(keys, false)
	defer b.cache.end()
	err := b.db.Update(func(tx *bbolt.Tx) error {
		bk, err := openBuckets(tx)
		if err != nil {
			return err
		}
		b.recent.check(b.sweeps.Load())
		wrote := false
		if b.onApplied != nil {
			t0 := time.Now()
			defer func() { b.onApplied(time.Since(t0)) }()
		}
		for _, r := range batch {
			w, err := b.applyOne(bk, r)
			if err != nil {
				return err
			}
			wrote = wrote || w
		}
		if !wrote {
			return errNothingWritten
		}
		return nil
	})
	switch {
	case err == nil:
		b.recent.keep(batch)
		b.commits.Add(1)
		if b.onCommit != nil {
			b.onCommit(time.Since(start), len(batch))
		}
	case errors.Is(err, errNothingWritten):
		err = nil
	}
	for _, r := range batch {
		if err != nil {
			// The file could not be written (a full disk, an I/O error):
			// nothing of the batch is stored, and the journal cannot
			// write until that is fixed.
			r.step, r.err = journal.Step{}, fmt.Errorf("apply step %s: commit journal: %w: %w", r.key, journal.ErrUnavailable, err)
		} else if r.wrote {
			b.watch.signal(r.key)
		}
		close(r.done)
	}
	answered = true
}
