package postgres

import (
	"context"
	"fmt"
)

// exclusiveLockKey is the first key of the advisory locks RunExclusive
// takes (the second is a hash of the schema and the work's name).
const exclusiveLockKey = 0x74677877 // "tgxw"

// RunExclusive runs fn only if no other replica (or goroutine) sharing the
// database is running work of the same name: it holds a session-level
// advisory lock on one pooled connection while fn runs. ran is false, and
// fn not called, when another holds the lock. Background passes that must
// run once across the replicas (a resolver of abandoned steps, a sweep
// that should not be repeated) call it on every replica at every interval;
// one of them does the work.
func (j *Journal) RunExclusive(ctx context.Context, name string, fn func(context.Context) error) (ran bool, err error) {
	op := "run " + name + " exclusively"
	if err := j.begin(op); err != nil {
		return false, err
	}
	conn, err := j.pool.Acquire(ctx)
	if err != nil {
		return false, classify(op, err, false)
	}
	defer conn.Release()
	lock := j.opts.Schema + "/" + name
	var got bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1, hashtext($2))", exclusiveLockKey, lock).Scan(&got); err != nil {
		return false, classify(op, err, false)
	}
	if !got {
		return false, nil
	}
	defer func() {
		// A failed unlock leaves the lock with the session: close it so the
		// lock goes with it.
		if _, uerr := conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1, hashtext($2))", exclusiveLockKey, lock); uerr != nil {
			_ = conn.Conn().Close(context.WithoutCancel(ctx))
		}
	}()
	if err := fn(ctx); err != nil {
		return true, fmt.Errorf("%s: %w", op, err)
	}
	return true, nil
}
