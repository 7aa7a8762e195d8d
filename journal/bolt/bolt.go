package bolt

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/toolguard/toolguard/journal"
)

// DefaultTimeout is the file-lock wait of Open when Options.Timeout is zero.
const DefaultTimeout = time.Second

// Journal is the bbolt backend of the journal: one file, one writer
// process. It is safe for concurrent use. Writes from concurrent callers
// share commits (see Apply).
type Journal struct {
	db       *bbolt.DB
	path     string
	log      *slog.Logger
	now      func() time.Time
	epoch    uint64
	readOnly bool
	skipLog  bool

	commits   atomic.Uint64
	onCommit  func(d time.Duration, batch int)
	onApplied func(d time.Duration) // tests: time spent running a batch's mutations
	closed    atomic.Bool           // fast path for reads; mu guards the transition

	// Group commit state (commit.go).
	mu      sync.Mutex
	idle    sync.Cond // signalled when busy becomes false
	queue   []*request
	busy    bool          // the committer has been kicked and not gone idle
	shut    bool          // Close was called: no new requests
	kick    chan struct{} // wakes the idle committer; closed by Close
	stopped chan struct{} // closed when the committer has returned
	// cache holds steps Get decoded (cache.go).
	cache readCache
	// recent holds the steps the committer last wrote; sweeps counts the
	// other writers of steps (recent.go).
	recent recentSteps
	sweeps atomic.Uint64
	// watch wakes the callers of Watch after commits (lease.go).
	watch watchers
	// The write-ahead log and the committer's open transaction
	// (checkpoint.go); only the committer touches lg. overlay holds the
	// steps written since the last checkpoint; dirty is set while a
	// transaction is open.
	lg          logged
	overlay     overlay
	dirty       atomic.Bool
	checkpoints atomic.Uint64
	logID       uint64
	// anyTransition lets tests seed any state without the allowlist
	// (Options.SeedStates; the package's own tests of indexes, counters and
	// file layout set it directly), which the conformance suite
	// (journaltest) tests on its own.
	anyTransition bool

	// stopDrop ends dropResidentLoop (resident.go); dropStopped is closed
	// when it has returned. residentBudget is Options.ResidentBudget with
	// its default applied.
	stopDrop, dropStopped chan struct{}
	residentBudget        int64
}

var (
	_ journal.Store      = (*Journal)(nil)
	_ journal.Maintainer = (*Journal)(nil)
)

// Open opens the journal at path, creating it (mode 0600) and its buckets
// when missing. A writable Open starts a new epoch and commits it durably
// before returning. Open waits at most Options.Timeout for the file lock and
// then fails with an error wrapping ErrLocked. A file written by a newer
// schema is refused with ErrSchema. Open does no scans: its cost does not
// grow with the number of steps.
func Open(path string, opts Options) (*Journal, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	b := &Journal{path: path, log: opts.Logger, now: opts.Now, readOnly: opts.ReadOnly, skipLog: opts.SkipLog,
		onCommit: opts.OnCommit, anyTransition: opts.SeedStates}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	if b.now == nil {
		b.now = time.Now
	}
	b.idle.L = &b.mu
	db, err := openFile(path, opts)
	if err != nil {
		return nil, err
	}
	b.db = db
	if opts.ReadOnly {
		err = db.View(b.loadMeta)
		if errors.Is(err, errPendingLog) {
			// A crashed writer's log: apply it, then look again.
			_ = db.Close()
			if err := applyLog(path, opts); err != nil {
				return nil, err
			}
			if db, err = openFile(path, opts); err != nil {
				return nil, err
			}
			b.db = db
			err = db.View(b.loadMeta)
		}
	} else if err = upgrade(db, b.log); err == nil {
		err = db.Update(func(tx *bbolt.Tx) error {
			if err := b.initMeta(tx); err != nil {
				return err
			}
			return b.recoverLog(tx)
		})
		if err == nil {
			b.lg.log, err = openLog(path, b.logID)
		}
	}
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open journal %s: %w", path, err)
	}
	b.kick, b.stopped = make(chan struct{}, 1), make(chan struct{})
	b.stopDrop, b.dropStopped = make(chan struct{}), make(chan struct{})
	b.residentBudget = cmp.Or(opts.ResidentBudget, DefaultResidentBudget)
	switch {
	case opts.ReadOnly:
		close(b.stopped)
		close(b.dropStopped)
		return b, nil
	case b.residentBudget < 0:
		close(b.dropStopped)
	default:
		go func() {
			defer close(b.dropStopped)
			b.dropResidentLoop(b.stopDrop)
		}()
	}
	b.lg.idle = time.NewTimer(checkpointEvery)
	b.lg.idle.Stop()
	go b.committer()
	return b, nil
}

// openFile opens the bbolt file of a journal.
func openFile(path string, opts Options) (*bbolt.DB, error) {
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{
		Timeout:  opts.Timeout,
		ReadOnly: opts.ReadOnly,
		// The hashmap freelist stays fast on large, fragmented files.
		FreelistType:    bbolt.FreelistMapType,
		InitialMmapSize: 1 << 30,
	})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("open journal %s: %w: waited %s for the lock; is another toolguard using this file?",
			path, ErrLocked, opts.Timeout)
	}
	if err != nil {
		return nil, fmt.Errorf("open journal %s: %w", path, err)
	}
	return db, nil
}

// applyLog writes the log of a stopped writer into the file, for a
// read-only Open: it needs the file writable once.
func applyLog(path string, opts Options) error {
	opts.ReadOnly = false
	db, err := openFile(path, opts)
	if err != nil {
		return fmt.Errorf("open journal %s: %w: its log holds writes not yet in the file, and applying them needs it writable", path, err)
	}
	b := &Journal{path: path, log: opts.Logger}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	err = func() (err error) {
		// bbolt panics on a damaged page: report it, as view does.
		defer func() {
			if v := recover(); v != nil {
				err = fmt.Errorf("%w: %v", journal.ErrCorrupt, v)
			}
		}()
		return db.Update(b.recoverLog)
	}()
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("open journal %s: apply its log: %w", path, err)
	}
	return nil
}

// initMeta creates the buckets, checks the schema and starts a new epoch.
func (b *Journal) initMeta(tx *bbolt.Tx) error {
	for _, name := range allBuckets {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	meta := tx.Bucket(bucketMeta)
	v := getUint(meta, keySchema)
	if err := checkSchema(v); err != nil {
		return err
	}
	if v == 1 {
		return fmt.Errorf("%w: the layout-1 file was not upgraded", ErrSchema)
	}
	if v != journal.SchemaVersion {
		if err := putUint(meta, keySchema, journal.SchemaVersion); err != nil {
			return err
		}
	}
	for _, name := range quotaBuckets {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	if err := scopeWorkflows(tx); err != nil {
		return err
	}
	if err := indexHolds(tx); err != nil {
		return err
	}
	b.epoch = getUint(meta, keyEpoch) + 1
	return putUint(meta, keyEpoch, b.epoch)
}

// loadMeta checks the schema of a read-only journal and reads its epoch.
func (b *Journal) loadMeta(tx *bbolt.Tx) error {
	if meta := tx.Bucket(bucketMeta); meta != nil && getUint(meta, keySchema) == 1 {
		return fmt.Errorf("%w: %w: the file has layout 1, written by an older toolguard; "+
			"open it writable once (toolguard serve, or toolguard journal compact) to upgrade it", ErrSchema, ErrNeedsUpgrade)
	}
	for _, name := range allBuckets {
		if tx.Bucket(name) == nil {
			return fmt.Errorf("%w: no %s bucket; not a toolguard journal", ErrSchema, name)
		}
	}
	meta := tx.Bucket(bucketMeta)
	if err := checkSchema(getUint(meta, keySchema)); err != nil {
		return err
	}
	b.epoch = getUint(meta, keyEpoch)
	if b.skipLog {
		return nil
	}
	if pending, err := pendingLog(tx, b.path); err != nil || pending {
		return cmp.Or(err, errPendingLog)
	}
	return nil
}

func checkSchema(v uint64) error {
	if v > journal.SchemaVersion {
		return fmt.Errorf("%w: version %d is newer than this build's %d; upgrade toolguard",
			ErrSchema, v, journal.SchemaVersion)
	}
	return nil
}

// Epoch returns the epoch of this Open: incremented by every writable Open,
// the latest one for a read-only journal (0 for a journal never opened
// writable).
func (b *Journal) Epoch() uint64 { return b.epoch }

// Path returns the file path given to Open.
func (b *Journal) Path() string { return b.path }

// ReadOnly reports whether the journal was opened with Options.ReadOnly.
func (b *Journal) ReadOnly() bool { return b.readOnly }

// Commits returns the number of durable group commits since Open: log
// syncs of Apply batches, and the commits of Sweep, ExpireHolds and
// PutCheckpoint (Open's own and checkpoints are not counted). Divided by
// the number of Apply calls it gives the fsyncs per write on the caller's
// path.
func (b *Journal) Commits() uint64 { return b.commits.Load() }

// Close waits for queued writes to commit, then closes the file. Apply
// fails with ErrClosed once Close has been called. Close is idempotent; only
// the first call can return an error.
func (b *Journal) Close() error {
	b.mu.Lock()
	if b.shut {
		b.mu.Unlock()
		return nil
	}
	b.shut = true
	b.closed.Store(true)
	for b.busy {
		b.idle.Wait()
	}
	b.mu.Unlock()
	if !b.readOnly {
		close(b.kick)
	}
	close(b.stopDrop)
	<-b.stopped
	<-b.dropStopped
	if err := b.db.Close(); err != nil {
		return fmt.Errorf("close journal %s: %w", b.path, err)
	}
	return nil
}

// Size returns the size of the journal file in bytes as of the latest
// commit; 0 once closed.
func (b *Journal) Size() int64 {
	var n int64
	_ = b.view("size journal", func(bk *buckets) error {
		n = bk.tx.Size()
		return nil
	})
	return n
}

// WriteTo writes a consistent copy of the journal, usable as a journal file,
// to w while reads and writes go on. It holds a read transaction for the
// duration; commits that need to grow the file wait for it to end.
func (b *Journal) WriteTo(w io.Writer) (int64, error) {
	var n int64
	err := b.view("back up journal", func(bk *buckets) error {
		var err error
		n, err = bk.tx.WriteTo(w)
		return err
	})
	return n, err
}

// view runs fn in a read transaction that sees every write acknowledged
// before it (it asks for a checkpoint first, checkpoint.go); op names the
// operation in errors.
func (b *Journal) view(op string, fn func(*buckets) error) error {
	if b.closed.Load() {
		return fmt.Errorf("%s: %w", op, journal.ErrClosed)
	}
	if err := b.sync(op); err != nil {
		return err
	}
	return b.rawView(op, fn)
}

// rawView runs fn in a read transaction of the file as of its last
// checkpoint.
func (b *Journal) rawView(op string, fn func(*buckets) error) (err error) {
	if b.closed.Load() {
		return fmt.Errorf("%s: %w", op, journal.ErrClosed)
	}
	// bbolt panics on a damaged page ("assertion failed: page expected to
	// be..."): report it as corruption instead of crashing a reader.
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%s: %w: %v", op, journal.ErrCorrupt, v)
		}
	}()
	err = b.db.View(func(tx *bbolt.Tx) error {
		bk, err := openBuckets(tx)
		if err != nil {
			return err
		}
		return fn(bk)
	})
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		err = journal.ErrClosed
	}
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}
