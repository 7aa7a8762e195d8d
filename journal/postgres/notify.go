package postgres

import (
	"context"
	"time"
)

// notifier sends the NOTIFYs of the final transitions of watched steps
// (see Watch) after their commits, a batch per statement, from a
// goroutine of its own.
//
// A NOTIFY inside the write's transaction would serialise every such
// commit: PostgreSQL holds one cluster-wide lock from queueing a
// transaction's notifications until its commit is flushed, so outcomes
// could not share a WAL flush (measured here: guarded calls at c64 went
// from about 1,500 to 400–650 req/s with the NOTIFY inside). Sent after
// the commit, in a transaction that writes no WAL, the lock is held for
// microseconds. A NOTIFY is a wake-up hint (see Watch): one lost when the
// queue is full, the connection fails or the process dies is made up for
// by the waiters' polling.
type notifier struct {
	j     *Journal
	keys  chan string
	stop  chan struct{}
	done  chan struct{}
	batch int
}

// notifyQueue bounds the keys waiting for their NOTIFY; past it they are
// dropped (the waiters poll).
const notifyQueue = 4096

func newNotifier(j *Journal) *notifier {
	n := &notifier{j: j, keys: make(chan string, notifyQueue), stop: make(chan struct{}), done: make(chan struct{}), batch: 256}
	go n.run()
	return n
}

// add queues a NOTIFY for key without blocking.
func (n *notifier) add(key string) {
	select {
	case n.keys <- key:
	default:
	}
}

func (n *notifier) run() {
	defer close(n.done)
	for {
		var first string
		select {
		case first = <-n.keys:
		case <-n.stop:
			return
		}
		keys := []string{first}
	drain:
		for len(keys) < n.batch {
			select {
			case k := <-n.keys:
				keys = append(keys, k)
			default:
				break drain
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := n.j.pool.Exec(ctx, "SELECT pg_notify($1, k) FROM unnest($2::text[]) AS k", n.j.channel, keys)
		cancel()
		if err != nil {
			n.j.log.Debug("journal: notify after commit failed; waiters poll", "keys", len(keys), "error", err)
		}
	}
}

// close stops the goroutine; queued NOTIFYs are dropped.
func (n *notifier) close() {
	close(n.stop)
	<-n.done
}
