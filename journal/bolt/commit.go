package bolt

// Group commit.
//
// An fsync is the journal's whole write budget, so concurrent Applies
// share them. There is no timer (bbolt's db.Batch waits up to
// MaxBatchDelay, 10 ms by default, even when a single caller is writing).
// Instead one committer goroutine per writable journal loops:
//
//   - A caller appends its request to the queue and, if the committer is
//     idle, wakes it; then it sleeps until its request is answered.
//   - The committer takes everything queued (up to maxBatch), runs the
//     mutations in queue order inside its open write transaction, appends
//     what they wrote to the log as one frame, syncs it once and answers
//     every request of the batch (checkpoint.go commits the transaction
//     to the file later).
//   - Requests that arrived meanwhile wait in the queue; the committer
//     takes them as the next batch at once, and goes idle only when the
//     queue is empty.
//
// At concurrency 1 every Apply is its own batch and pays one log sync;
// under load, batches grow to the number of waiting callers. A committer of
// its own, rather than a leader elected among the callers, means no
// hand-off between batches: a woken caller would first have to be
// scheduled, and under load that wait is paid by every request queued
// behind it.
//
// Nothing is ever retried. bbolt's Batch re-runs the functions of a failed
// batch one by one, which is harmless for pure functions but not for ours: a
// Mutation's answer is a decision its caller acts on (for instance "you own
// this step: send the request"), it may record that decision outside the
// transaction, and the contract says it runs exactly once. A mutation's own
// error never fails the transaction here, so there is nothing to isolate by
// retrying; and a failed log write (I/O error, full disk) would most likely
// fail again. So when the batch cannot be logged, every caller of the batch
// gets the error and nothing of the batch is written.

import (
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/toolguard/toolguard/journal"
)

// maxBatch bounds the number of requests in one transaction.
const maxBatch = 1024

// request is one Apply waiting in the queue.
type request struct {
	key  string
	m    journal.Mutation
	done chan struct{} // closed when the result is set
	// sync asks for a checkpoint instead (checkpoint.go); err is its
	// result.
	sync bool

	// Result, set by the committer before done is closed.
	step  journal.Step
	err   error
	panic *panicError
	// wrote is set when the request's change is part of the commit;
	// written and ref are then the step as written and where (recent.go).
	wrote   bool
	written journal.Step
	ref     stepRef
	pending *pending // what was written, for the log
}

// errNothingWritten marks a batch in which no request wrote: there is
// nothing to log, and no fsync to pay.
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
// empty, then waits to be kicked again, checkpointing the open transaction
// when it has been idle for checkpointEvery; it checkpoints one last time
// and returns when kick is closed.
func (b *Journal) committer() {
	defer close(b.stopped)
	lg := &b.lg
	lg.idle = time.NewTimer(checkpointEvery)
	lg.idle.Stop()
	for {
		select {
		case _, ok := <-b.kick:
			if !ok {
				b.closeLog()
				return
			}
		case <-lg.idle.C:
			if err := b.checkpoint(); err != nil {
				b.log.Error("journal: checkpoint failed; its writes stay in the log", "err", err)
			}
			continue
		}
		lg.idle.Stop()
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
		if lg.tx != nil {
			lg.idle.Reset(checkpointEvery)
		}
	}
}

// closeLog checkpoints for Close and closes the log. A checkpoint that
// fails leaves its writes in the log, which the next Open applies.
func (b *Journal) closeLog() {
	lg := &b.lg
	if err := b.checkpoint(); err != nil {
		b.log.Error("journal: the last checkpoint failed; the next Open applies the log", "err", err)
	}
	if lg.tx != nil {
		_ = lg.tx.Rollback()
		lg.tx = nil
	}
	if err := lg.log.close(); err != nil {
		b.log.Error("journal: close log", "err", err)
	}
}

// commit runs the writes of batch, then, if a request of the batch asks
// for one, a checkpoint.
func (b *Journal) commit(batch []*request) {
	writes := batch[:0:0]
	var syncs []*request
	for _, r := range batch {
		if r.sync {
			syncs = append(syncs, r)
		} else {
			writes = append(writes, r)
		}
	}
	if len(writes) > 0 {
		b.commitWrites(writes)
	}
	if len(syncs) > 0 || b.due() {
		err := b.checkpoint()
		if err != nil && len(syncs) == 0 {
			b.log.Error("journal: checkpoint failed; its writes stay in the log", "err", err)
		}
		for _, r := range syncs {
			r.err = err
			close(r.done)
		}
	}
}

// commitWrites runs the mutations of batch in the open transaction, logs
// what they wrote in one frame and answers every request.
func (b *Journal) commitWrites(batch []*request) {
	answered := false
	defer func() {
		if answered {
			return
		}
		// A panic outside any mutation (a bug here, or bbolt on a damaged
		// page): answer everyone so that no caller waits forever, and undo
		// the batch. The committer goes on.
		v := recover()
		b.log.Error("journal: commit aborted by a panic; nothing of the batch was written",
			"panic", fmt.Sprint(v), "batch", len(batch), "stack", string(debug.Stack()))
		b.abort()
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
	err := b.runBatch(batch)
	switch {
	case err == nil:
		b.overlay.add(batch)
		b.recent.keep(batch)
		b.commits.Add(1)
		if b.onCommit != nil {
			b.onCommit(time.Since(start), len(batch))
		}
	case errors.Is(err, errNothingWritten):
		err = nil
	default:
		b.abort()
	}
	for _, r := range batch {
		if err != nil {
			// The log could not be written (a full disk, an I/O error):
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

// runBatch runs the mutations of batch in the open transaction and logs
// what they wrote; errNothingWritten when none wrote.
func (b *Journal) runBatch(batch []*request) error {
	if err := b.begin(); err != nil {
		return err
	}
	if b.onApplied != nil {
		t0 := time.Now()
		defer func() { b.onApplied(time.Since(t0)) }()
	}
	wrote := false
	for _, r := range batch {
		w, err := b.applyOne(b.lg.bk, r)
		if err != nil {
			return err
		}
		wrote = wrote || w
	}
	if !wrote {
		return errNothingWritten
	}
	if err := b.logBatch(batch); err != nil {
		return err
	}
	// Logged: the batch is durable whatever happens next.
	b.overlay.addFlows(b.lg.bk, batch)
	return nil
}
