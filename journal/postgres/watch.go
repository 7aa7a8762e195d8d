package postgres

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolguard/toolguard/journal"
)

// watcher delivers wake-up hints to Watch callers: after this process's
// own writes of a key, and on the NOTIFYs that any replica's final
// transitions send, received on one dedicated listener connection per
// Journal, started by the first Watch.
type watcher struct {
	j       *Journal
	mu      sync.Mutex
	subs    map[string]map[chan struct{}]struct{}
	started bool
	ctx     context.Context
	cancel  context.CancelFunc
	done    chan struct{}
	// listening is closed once the first LISTEN is in place (tests).
	listening chan struct{}
}

func newWatcher(j *Journal) *watcher {
	ctx, cancel := context.WithCancel(context.Background())
	return &watcher{j: j, subs: map[string]map[chan struct{}]struct{}{}, ctx: ctx, cancel: cancel,
		done: make(chan struct{}), listening: make(chan struct{})}
}

// Watch returns a channel that receives a value when the step of key may
// have changed, and a function that stops the watch. It is a hint only:
// notifications can be lost (the listener reconnecting, a replica dying
// between its commit and the NOTIFY's delivery), so callers must also poll
// with Get; on a reconnect of the listener every watcher is woken.
//
// Watch marks the step watched, so that its final transition, on any
// replica, sends the NOTIFY that wakes this one (a step nobody waits for
// sends none). A step that does not exist yet is not marked: its waiter
// polls. A step already final when it is marked wakes the watcher at
// once: its transition may have committed between the caller's read and
// the mark, and then sent no NOTIFY.
func (j *Journal) Watch(key string) (<-chan struct{}, func()) {
	ch, stop := j.watch.add(key)
	if j.markWatched(key) {
		j.watch.signal(key)
	}
	return ch, stop
}

// markWatchedSQL sets the step's watched flag and returns its state as of
// the mark: the row it updated (after any transition it waited for), or,
// when another waiter marked it first, the row as it is.
const markWatchedSQL = `WITH m AS (
	UPDATE steps SET watched = true WHERE key = $1 AND NOT watched RETURNING status, hold
)
SELECT status, hold FROM m
UNION ALL
SELECT status, hold FROM steps WHERE key = $1 AND NOT EXISTS (SELECT 1 FROM m)`

// markWatched sets the step's watched flag and reports whether the step is
// already final; a failure leaves the waiter to its polling.
func (j *Journal) markWatched(key string) bool {
	if j.closed.Load() {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var status, hold int16
	err := j.pool.QueryRow(ctx, markWatchedSQL, key).Scan(&status, &hold)
	if errors.Is(err, pgx.ErrNoRows) {
		return false
	}
	if err != nil {
		j.log.Debug("journal: mark a watched step failed; its waiter polls", "key", key, "error", err)
		return false
	}
	s := journal.Step{Status: journal.Status(status), Hold: journal.Hold(hold)}
	return final(&s)
}

func (w *watcher) add(key string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.subs[key] == nil {
		w.subs[key] = map[chan struct{}]struct{}{}
	}
	w.subs[key][ch] = struct{}{}
	if !w.started && !w.j.closed.Load() {
		w.started = true
		go w.listen()
	}
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			delete(w.subs[key], ch)
			if len(w.subs[key]) == 0 {
				delete(w.subs, key)
			}
		})
	}
}

// signal wakes the watchers of key without blocking.
func (w *watcher) signal(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch := range w.subs[key] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// signalAll wakes every watcher: after a reconnect, notifications may have
// been missed.
func (w *watcher) signalAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, subs := range w.subs {
		for ch := range subs {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}

// listen keeps a LISTEN connection open until close, reconnecting with a
// backoff of up to 5s.
func (w *watcher) listen() {
	defer close(w.done)
	backoff := 100 * time.Millisecond
	first := true
	for w.ctx.Err() == nil {
		err := w.session(&first)
		if w.ctx.Err() != nil {
			return
		}
		w.j.log.Warn("journal: listener connection lost; watchers fall back on polling until it is back",
			"err", err, "retry_in", backoff)
		w.signalAll()
		select {
		case <-w.ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// session runs one listener connection until it fails.
func (w *watcher) session(first *bool) error {
	cfg := w.j.pool.Config().ConnConfig.Copy()
	conn, err := pgx.ConnectConfig(w.ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(w.ctx, "LISTEN "+pgx.Identifier{w.j.channel}.Sanitize()); err != nil {
		return err
	}
	if *first {
		*first = false
		close(w.listening)
	} else {
		w.signalAll() // whatever happened while we were away
	}
	for {
		n, err := conn.WaitForNotification(w.ctx)
		if err != nil {
			return err
		}
		w.signal(n.Payload)
	}
}

// close stops the listener and waits for it.
func (w *watcher) close() {
	w.mu.Lock()
	started := w.started
	w.started = true // no listener starts after close
	w.mu.Unlock()
	w.cancel()
	if started {
		<-w.done
	}
}
