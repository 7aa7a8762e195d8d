package bolt

// Checkpoints.
//
// The committer keeps one bbolt write transaction open across batches
// (wal.go says why). Each batch's mutations run in it, so they see every
// earlier write, counters and indexes included; the batch is then appended
// to the log and synced, and only then are its callers answered. A
// checkpoint commits the transaction, with the LSN of its last frame, when
// the log holds checkpointBytes, when the transaction is checkpointEvery
// old, when the committer has been idle that long, when a reader or
// another writer asks for it (sync), and on Close.
//
// Until its checkpoint, a write is in the log and in the open
// transaction, which other transactions do not see: Get reads it from the
// overlay, every write since the last checkpoint by key; every other read
// (List, Events, Count, workflows, backups, Check) asks for a checkpoint
// first. Every other writer (Sweep, ExpireHolds, PutCheckpoint, Ping) runs
// its own transaction right after a checkpoint, holding the committer's
// role (update), so the log never holds a write made on a state that a
// write outside it has changed since; each of them also counts itself in
// the applied LSN, so that a log left beside a file restored from an older
// backup does not match it.
//
// When a batch cannot be logged, or its transaction is spoiled (a write
// error, a panic outside the mutations), the transaction is rolled back
// and built again from the frames logged since it began, which are
// durable; the batch's callers get the error. A checkpoint that fails
// builds it again the same way, and is tried again later.

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/bbolt"

	"github.com/toolguard/toolguard/journal"
)

// checkpointBytes is the log volume, and about the overlay's, that
// triggers a checkpoint.
const checkpointBytes = 4 << 20

// checkpointEvery bounds the age of the open transaction, and the idle
// time after which it is committed (a variable for tests).
var checkpointEvery = 100 * time.Millisecond

// Meta keys of the log.
var (
	keyLogID      = []byte("log/id")
	keyLogApplied = []byte("log/applied")
)

// logged is the committer's state between checkpoints.
type logged struct {
	log   *logFile
	tx    *bbolt.Tx // nil between a checkpoint and the next batch
	bk    *buckets
	began time.Time
	// retryAt delays the next due checkpoint after one failed.
	retryAt time.Time
	lsn     uint64   // the last LSN logged
	frames  [][]byte // the payloads logged since tx began
	bytes   int
	idle    *time.Timer
	// broken is set when the open transaction could not be built again
	// from the log: nothing is written until a restart replays it.
	broken error
}

// overlay holds the steps written since the last checkpoint, for Get, and
// the workflow records they changed, for GetWorkflow (nil: removed).
type overlay struct {
	mu    sync.RWMutex
	m     map[string]journal.Step
	flows map[string]*journal.Workflow
	// stale is set when a changed workflow record could not be read back:
	// GetWorkflow then asks for a checkpoint.
	stale bool
}

// workflow returns the record of (scope, id) as changed since the last
// checkpoint (nil: removed); ok is false when it did not change, and
// stale when the overlay cannot tell.
func (o *overlay) workflow(scope, id string) (w *journal.Workflow, ok, stale bool) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	w, ok = o.flows[string(workflowKey(scope, id))]
	if ok && w != nil {
		c := *w
		c.Checkpoint = bytes.Clone(w.Checkpoint)
		w = &c
	}
	return w, ok, o.stale
}

// addFlows records the workflow records that the writes of batch changed,
// as the open transaction holds them.
func (o *overlay) addFlows(bk *buckets, batch []*request) {
	var touched []string
	for _, r := range batch {
		if !r.wrote || r.err != nil {
			continue
		}
		p := r.pending
		for _, s := range []*journal.Step{&p.step, p.old} {
			if s != nil && s.Workflow != "" {
				touched = append(touched, s.CredentialMAC, s.Workflow, "", s.Workflow)
			}
		}
	}
	if len(touched) == 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.flows == nil {
		o.flows = make(map[string]*journal.Workflow)
	}
	for i := 0; i < len(touched); i += 2 {
		w, err := loadWorkflow(bk.workflows, touched[i], touched[i+1])
		switch {
		case errors.Is(err, journal.ErrNotFound):
			w = nil
		case err != nil:
			o.stale = true
			continue
		}
		o.flows[string(workflowKey(touched[i], touched[i+1]))] = w
	}
}

func (o *overlay) get(key string) (journal.Step, bool) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	s, ok := o.m[key]
	if !ok {
		return journal.Step{}, false
	}
	return copyStep(&s), true
}

func (o *overlay) add(batch []*request) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = make(map[string]journal.Step, len(batch))
	}
	for _, r := range batch {
		if r.wrote && r.err == nil {
			o.m[r.key] = copyStep(&r.pending.step)
		}
	}
}

func (o *overlay) keys() []string {
	o.mu.RLock()
	defer o.mu.RUnlock()
	out := make([]string, 0, len(o.m))
	for k := range o.m {
		out = append(out, k)
	}
	return out
}

func (o *overlay) clear() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.m, o.flows, o.stale = nil, nil, false
}

// begin opens the committer's transaction if none is open.
func (b *Journal) begin() error {
	lg := &b.lg
	if lg.broken != nil {
		return lg.broken
	}
	if lg.tx != nil {
		return nil
	}
	tx, err := b.db.Begin(true)
	if err != nil {
		return err
	}
	bk, err := openBuckets(tx)
	if err != nil {
		_ = tx.Rollback()
		return err
	}
	lg.tx, lg.bk, lg.began = tx, bk, time.Now()
	lg.lsn = getUint(bk.meta, keyLogApplied)
	lg.frames, lg.bytes = nil, 0
	lg.log.rewind()
	b.recent.check(b.sweeps.Load())
	b.dirty.Store(true)
	return nil
}

// logBatch appends the writes of batch to the log as one frame and syncs
// it.
func (b *Journal) logBatch(batch []*request) error {
	lg := &b.lg
	payload := make([]byte, 0, payloadSize(batch))
	for _, r := range batch {
		if !r.wrote || r.err != nil {
			continue
		}
		var err error
		if payload, err = appendRecord(payload, r.pending); err != nil {
			return err
		}
	}
	if err := lg.log.append(lg.lsn+1, payload); err != nil {
		return err
	}
	lg.lsn++
	lg.frames = append(lg.frames, payload)
	lg.bytes += len(payload)
	return nil
}

// due reports whether the open transaction should be checkpointed now.
func (b *Journal) due() bool {
	lg := &b.lg
	if lg.tx == nil || time.Now().Before(lg.retryAt) {
		return false
	}
	return lg.bytes >= checkpointBytes || time.Since(lg.began) >= checkpointEvery
}

// checkpoint commits the open transaction with the LSN of its last frame,
// then starts the log again.
func (b *Journal) checkpoint() error {
	lg := &b.lg
	if lg.tx == nil {
		return lg.broken
	}
	if len(lg.frames) == 0 {
		_ = lg.tx.Rollback()
		lg.tx, lg.bk = nil, nil
		b.dirty.Store(false)
		return nil
	}
	keys := b.overlay.keys()
	b.cache.begin(keys, false)
	defer b.cache.end()
	err := putUint(lg.bk.meta, keyLogApplied, lg.lsn)
	if err == nil {
		err = lg.tx.Commit()
	} else {
		_ = lg.tx.Rollback()
	}
	lg.tx, lg.bk = nil, nil
	if err != nil {
		b.rebuild()
		lg.retryAt = time.Now().Add(checkpointEvery) // unless asked for
		return fmt.Errorf("checkpoint journal: %w: %w", journal.ErrUnavailable, err)
	}
	lg.frames, lg.bytes = nil, 0
	b.overlay.clear()
	b.dirty.Store(false)
	b.checkpoints.Add(1)
	return nil
}

// abort rolls back a spoiled transaction and builds it again from the
// log.
func (b *Journal) abort() {
	lg := &b.lg
	if lg.broken != nil {
		return
	}
	if lg.tx != nil {
		_ = lg.tx.Rollback()
		lg.tx, lg.bk = nil, nil
	}
	clear(b.recent.m)
	b.rebuild()
}

// rebuild opens a transaction again with the frames logged since the last
// checkpoint written in it; with none, the next batch begins afresh.
func (b *Journal) rebuild() {
	lg := &b.lg
	clear(b.recent.m)
	if len(lg.frames) == 0 {
		b.dirty.Store(false)
		return
	}
	err := func() error {
		tx, err := b.db.Begin(true)
		if err != nil {
			return err
		}
		bk, err := openBuckets(tx)
		if err == nil {
			err = replayFrames(bk, lg.frames)
		}
		if err == nil && getUint(bk.meta, keyLogApplied)+uint64(len(lg.frames)) != lg.lsn {
			err = fmt.Errorf("%w: the file applied LSN %d, the log holds %d frames up to %d",
				journal.ErrCorrupt, getUint(bk.meta, keyLogApplied), len(lg.frames), lg.lsn)
		}
		if err != nil {
			_ = tx.Rollback()
			return err
		}
		lg.tx, lg.bk = tx, bk
		return nil
	}()
	if err != nil {
		lg.broken = fmt.Errorf("%w: the journal's logged writes could not be applied again (%v); restart toolguard to replay its log", journal.ErrUnavailable, err)
		b.log.Error("journal: " + lg.broken.Error())
	}
}

func replayFrames(bk *buckets, frames [][]byte) error {
	for _, f := range frames {
		if err := bk.replay(f); err != nil {
			return err
		}
	}
	return nil
}

// sync returns once every write acknowledged before it was called is in
// the file, where transactions other than the committer's see it.
func (b *Journal) sync(op string) error {
	if b.readOnly || !b.dirty.Load() {
		return nil
	}
	r := &request{sync: true, done: make(chan struct{})}
	if !b.submit(r) {
		return fmt.Errorf("%s: %w", op, journal.ErrClosed)
	}
	if r.err != nil {
		return fmt.Errorf("%s: %w", op, r.err)
	}
	return nil
}

// update runs fn in a write transaction of its own, outside the log: a
// checkpoint first commits the committer's transaction, and fn runs while
// the caller holds the committer's role, so no batch is logged on a state
// fn is changing, and no read of the overlay outlives what fn writes. The
// error is fn's, the checkpoint's, or ErrClosed.
func (b *Journal) update(fn func(tx *bbolt.Tx) error) error {
	r := &request{sync: true, fn: func() error { return b.db.Update(fn) }, done: make(chan struct{})}
	if !b.submit(r) {
		return journal.ErrClosed
	}
	return r.err
}

// bumpApplied counts a write made outside the log in the applied LSN.
func bumpApplied(meta *bbolt.Bucket) error {
	return putUint(meta, keyLogApplied, getUint(meta, keyLogApplied)+1)
}

// logID returns the file's log id, creating it in a writable transaction.
func logID(meta *bbolt.Bucket, writable bool) (uint64, error) {
	if v := meta.Get(keyLogID); len(v) == 8 {
		return binary.BigEndian.Uint64(v), nil
	}
	if !writable {
		return 0, nil
	}
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return 0, fmt.Errorf("log id: %w", err)
	}
	return binary.BigEndian.Uint64(id[:]), meta.Put(keyLogID, id[:])
}

// recoverLog writes the frames the file has not applied, in a writable
// Open's transaction, and counts the Open itself in the applied LSN.
func (b *Journal) recoverLog(tx *bbolt.Tx) error {
	meta := tx.Bucket(bucketMeta)
	id, err := logID(meta, true)
	if err != nil {
		return err
	}
	applied := getUint(meta, keyLogApplied)
	frames, err := scanLog(b.path, id, applied)
	if err != nil {
		return err
	}
	if len(frames) > 0 {
		bk, err := openBuckets(tx)
		if err != nil {
			return err
		}
		if err := replayFrames(bk, frames); err != nil {
			return fmt.Errorf("replay log: %w", err)
		}
		b.log.Info("journal: applied the writes logged before the last stop", "frames", len(frames))
	}
	b.logID = id
	return putUint(meta, keyLogApplied, applied+uint64(len(frames))+1)
}

// pendingLog reports whether the log beside a file opened read-only holds
// writes the file has not applied.
func pendingLog(tx *bbolt.Tx, path string) (bool, error) {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		return false, nil
	}
	id, _ := logID(meta, false)
	if id == 0 {
		return false, nil
	}
	frames, err := scanLog(path, id, getUint(meta, keyLogApplied))
	return len(frames) > 0, err
}

// errPendingLog asks a read-only Open to apply the log first.
var errPendingLog = errors.New("the log holds writes not yet applied")
