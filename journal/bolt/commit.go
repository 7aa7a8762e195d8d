package bolt

// Group commit.
//
// An fsync is the journal's whole write budget, so concurrent Applies
// share them. There is no timer (bbolt's db.Batch waits up to
// MaxBatchDelay, 10 ms by default, even when a single caller is writing).
// Instead one goroutine at a time holds the committer's role (busy) and
// loops:
//
//   - A caller appends its request to the queue. If the role is free, it
//     takes it and commits on its own goroutine; otherwise it sleeps until
//     its request is answered.
//   - The holder takes everything queued (up to maxBatch), runs the
//     mutations in queue order inside the open write transaction, appends
//     what they wrote to the log as one frame, syncs it once and answers
//     every request of the batch (checkpoint.go commits the transaction
//     to the file later).
//   - Requests that arrived meanwhile wait in the queue. A caller that
//     took the role hands it, once its own request is answered, to the
//     committer goroutine, which takes them as the next batch at once and
//     gives the role up only when the queue is empty.
//
// At concurrency 1 every Apply is its own batch, committed on the
// caller's goroutine with one log sync and no hand-off. Under load,
// batches grow to the number of waiting callers, and the committer
// goroutine runs them back to back: a caller elected to commit for others
// would make its own answer wait for theirs.
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
	// sync asks for a checkpoint instead (checkpoint.go), then for fn to
	// run, if set; err is their result.
	sync bool
	fn   func() error

	// Result, set by the committer before done is closed.
	step  journal.Step
	err   error
	panic *panicError
	// wrote is set when the request's change is part of the commit;
	// pending is then what was written: the step, where (recent.go), and
	// its events, for the log.
	wrote   bool
	pending *pending
}

// errNothingWritten marks a batch in which no request wrote: there is
// nothing to log, and no fsync to pay.
var errNothingWritten = errors.New("nothing written")

// submit queues r and returns once r has its result; false means the
// journal is closed and r was not queued. A caller that finds the
// committer's role free takes it and commits its own batch on its own
// goroutine, sparing itself two goroutine switches (the wake-up of the
// committer and its own); once answered, it hands what has queued since to
// the committer goroutine.
func (b *Journal) submit(r *request) bool {
	b.mu.Lock()
	if b.shut {
		b.mu.Unlock()
		return false
	}
	b.queue = append(b.queue, r)
	lead := !b.busy
	if lead {
		b.busy = true
		b.lg.idle.Stop()
	}
	b.mu.Unlock()
	if lead {
		b.drain(r)
	}
	<-r.done
	return true
}

// drain commits batches taken from the head of the queue, holding the
// committer's role (busy), until the queue is empty; then it gives the
// role up and arms the idle checkpoint. A caller leading for its own
// request (own) stops as soon as own is answered and hands the role, with
// whatever is queued and a checkpoint that is due, to the committer
// goroutine, which runs them.
func (b *Journal) drain(own *request) {
	for {
		if own == nil && b.due() {
			if err := b.checkpoint(); err != nil {
				b.log.Error("journal: checkpoint failed; its writes stay in the log", "err", err)
			}
		}
		b.mu.Lock()
		n := min(len(b.queue), maxBatch)
		if own != nil && answered(own) && (n > 0 || b.due()) {
			b.mu.Unlock()
			b.kick <- struct{}{}
			return
		}
		if n == 0 {
			b.queue = nil
			b.busy = false
			if b.lg.tx != nil {
				b.lg.idle.Reset(checkpointEvery)
			}
			b.idle.Broadcast()
			b.mu.Unlock()
			return
		}
		batch := b.queue[:n:n]
		b.queue = b.queue[n:]
		b.mu.Unlock()
		b.commit(batch)
	}
}

func answered(r *request) bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// committer takes the committer's role when a leading caller hands it
// over (kick), and checkpoints the open transaction when the journal has
// been idle for checkpointEvery; it checkpoints one last time and returns
// when kick is closed.
func (b *Journal) committer() {
	defer close(b.stopped)
	for {
		select {
		case _, ok := <-b.kick:
			if !ok {
				b.closeLog()
				return
			}
			b.drain(nil)
		case <-b.lg.idle.C:
			b.mu.Lock()
			if b.busy || b.shut {
				b.mu.Unlock()
				continue
			}
			b.busy = true
			b.mu.Unlock()
			if err := b.checkpoint(); err != nil {
				b.log.Error("journal: checkpoint failed; its writes stay in the log", "err", err)
			}
			b.drain(nil)
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
// for one, a checkpoint (drain runs the others).
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
	if len(syncs) > 0 {
		err := b.checkpoint()
		for _, r := range syncs {
			r.err = err
			if err == nil && r.fn != nil {
				r.err = r.fn()
			}
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
