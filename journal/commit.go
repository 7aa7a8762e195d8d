package journal

// Group commit.
//
// An fsync costs about half a millisecond and is the journal's whole write
// budget, so concurrent Applies share commits. There is no timer (bbolt's
// db.Batch waits up to MaxBatchDelay, 10 ms by default, even when a single
// caller is writing). Instead:
//
//   - A caller appends its request to the queue. If no commit is in
//     progress it becomes the leader; otherwise it sleeps until it is either
//     answered or woken to lead.
//   - The leader takes everything queued (up to maxBatch), runs the
//     mutations in queue order inside one write transaction, commits once
//     and answers every request of the batch.
//   - Requests that arrived during the commit wait in the queue; the leader
//     wakes the first of them to lead the next batch and returns.
//
// At concurrency 1 every Apply is its own batch and pays one commit; under
// load, batches grow to the number of waiting callers.
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
	"time"

	bolt "go.etcd.io/bbolt"
)

// maxBatch bounds the number of requests in one transaction.
const maxBatch = 1024

type wake uint8

const (
	wakeDone wake = iota + 1 // the result is set
	wakeLead                 // the request heads the queue: commit a batch
)

// request is one Apply waiting in the queue.
type request struct {
	key  string
	m    Mutation
	wake chan wake // buffered (1): every request is woken exactly once

	// Result, set by the leader before waking.
	step  Step
	err   error
	panic *panicError
}

// errNothingWritten rolls back a batch in which no request wrote, saving
// the commit and its fsync.
var errNothingWritten = errors.New("nothing written")

// submit queues r and returns once r has its result; false means the
// journal is closed and r was not queued.
func (b *Bolt) submit(r *request) bool {
	b.mu.Lock()
	if b.shut {
		b.mu.Unlock()
		return false
	}
	b.queue = append(b.queue, r)
	lead := !b.busy
	b.busy = true
	b.mu.Unlock()
	if lead || <-r.wake == wakeLead {
		b.lead()
	}
	return true
}

// lead commits one batch taken from the head of the queue, then hands the
// lead to the next queued request or marks the committer idle.
func (b *Bolt) lead() {
	b.mu.Lock()
	n := min(len(b.queue), maxBatch)
	batch := b.queue[:n:n]
	b.queue = b.queue[n:]
	if len(b.queue) == 0 {
		b.queue = nil
	}
	b.mu.Unlock()
	defer b.handOff()
	b.commit(batch)
}

func (b *Bolt) handOff() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.queue) > 0 {
		b.queue[0].wake <- wakeLead
		return
	}
	b.busy = false
	b.idle.Broadcast()
}

// commit applies batch in one transaction and answers every request.
func (b *Bolt) commit(batch []*request) {
	answered := false
	defer func() {
		if answered {
			return
		}
		// A panic outside any mutation (a bug here or in bbolt): answer
		// everyone so that no caller waits forever, then let it go on.
		v := recover()
		for _, r := range batch {
			r.step, r.err = Step{}, fmt.Errorf("apply step %s: journal commit aborted: %v", r.key, v)
			r.wake <- wakeDone
		}
		if v != nil {
			panic(v)
		}
	}()
	start := time.Now()
	err := b.db.Update(func(tx *bolt.Tx) error {
		bk, err := openBuckets(tx)
		if err != nil {
			return err
		}
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
		b.commits.Add(1)
		if b.onCommit != nil {
			b.onCommit(time.Since(start), len(batch))
		}
	case errors.Is(err, errNothingWritten):
		err = nil
	}
	for _, r := range batch {
		if err != nil {
			r.step, r.err = Step{}, fmt.Errorf("apply step %s: commit journal: %w", r.key, err)
		}
		r.wake <- wakeDone
	}
	answered = true
}
