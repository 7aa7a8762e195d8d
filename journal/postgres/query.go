package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolguard/toolguard/journal"
)

// defaultLimit bounds List, Events and ListWorkflows when no limit is
// given, as in the bbolt backend.
const defaultLimit = 1000

// stepColumns are what decodeStep scans, in order.
const stepColumns = "s.revision, s.lease_until, s.record, s.response_body"

// readStep is one round trip that commits nothing: the database's clock and
// the step's row, if any.
const readStep = "SELECT now(), " + stepColumns + " FROM (VALUES (1)) AS one (x) LEFT JOIN steps s ON s.key = $1"

// read returns the current record of key (nil when there is none) and the
// database's clock at the read. A read that fails on a broken connection
// is tried once more, after the pool dropped the connections that died
// with it (a read is safe to repeat).
func (j *Journal) read(ctx context.Context, key string) (*journal.Step, time.Time, error) {
	var now time.Time
	var rev *int64
	var lease *time.Time
	var record, body []byte
	scan := func() error {
		return j.pool.QueryRow(ctx, readStep, key).Scan(&now, &rev, &lease, &record, &body)
	}
	err := scan()
	if err != nil && ctx.Err() == nil && errors.Is(j.fault("", err, false), journal.ErrUnavailable) {
		err = scan()
	}
	if err != nil {
		return nil, time.Time{}, j.fault("read step "+key, err, false)
	}
	now = now.UTC()
	if rev == nil {
		return nil, now, nil
	}
	s, err := decodeStep(*rev, lease, record, body)
	if err != nil {
		return nil, now, fmt.Errorf("step %s: %w", key, err)
	}
	s.ReadAt = now
	return s, now, nil
}

// decodeStep rebuilds a step from its row.
func decodeStep(rev int64, lease *time.Time, record, body []byte) (*journal.Step, error) {
	var s journal.Step
	if err := json.Unmarshal(record, &s); err != nil {
		return nil, fmt.Errorf("%w: decode step: %v", journal.ErrCorrupt, err)
	}
	s.Revision = uint64(rev)
	if lease != nil {
		s.LeaseUntil = lease.UTC()
	}
	if s.Response != nil && len(body) > 0 {
		s.Response.Body = body
	}
	return &s, nil
}

// Get returns the step of key, or an error wrapping journal.ErrNotFound.
// The step's ReadAt is the database's clock at the read.
func (j *Journal) Get(key string) (journal.Step, error) {
	if err := j.begin("get step " + key); err != nil {
		return journal.Step{}, err
	}
	ctx, cancel := j.opContext()
	defer cancel()
	s, now, err := j.read(ctx, key)
	if err != nil {
		return journal.Step{}, fmt.Errorf("get step %s: %w", key, err)
	}
	if !j.readOnly {
		j.hints.put(key, s, now) // for the Apply that usually follows (hints.go)
	}
	if s == nil {
		return journal.Step{}, fmt.Errorf("get step %s: %w", key, journal.ErrNotFound)
	}
	return *s, nil
}

// List returns the steps that match f, at most f.Limit (default 1000), in
// the order of the bbolt backend: pending verifications earliest deadline
// first; a workflow's steps or a hold's in key order; a status's least
// recently updated first; otherwise the most recently updated first. An
// empty result is a nil slice and no error.
func (j *Journal) List(f journal.Filter) ([]journal.Step, error) {
	if err := j.begin("list steps"); err != nil {
		return nil, err
	}
	limit := f.Limit
	if limit <= 0 {
		limit = defaultLimit
	}
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if f.Status != journal.StatusUnknown {
		where = append(where, "s.status = "+arg(int16(f.Status)))
	}
	if f.HoldSet || f.Hold != journal.HoldNone {
		where = append(where, "s.hold = "+arg(int16(f.Hold)))
	}
	if f.Workflow != "" {
		where = append(where, "s.workflow = "+arg(f.Workflow))
	}
	if f.VerifyPending {
		where = append(where, "s.verify_by IS NOT NULL")
	}
	var order string
	switch {
	case f.VerifyPending:
		order = "s.verify_by, s.key"
	case f.Workflow != "":
		order = "s.key"
	case f.Hold != journal.HoldNone:
		order = "s.hold, s.key"
	case f.Status != journal.StatusUnknown:
		order = "s.status, s.updated_at, s.key"
	default:
		order = "s.updated_at DESC, s.key DESC"
	}
	q := "SELECT " + stepColumns + ", now() FROM steps s"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY " + order + " LIMIT " + arg(limit)
	ctx, cancel := j.opContext()
	defer cancel()
	return j.querySteps(ctx, "list steps", q, args...)
}

// querySteps runs q, which selects stepColumns, and decodes its rows; each
// step's ReadAt is the database's clock at the query.
func (j *Journal) querySteps(ctx context.Context, op, q string, args ...any) ([]journal.Step, error) {
	var out []journal.Step
	err := j.eachStep(ctx, op, q, args, func(s journal.Step) error {
		out = append(out, s)
		return nil
	})
	return out, err
}

// eachStep calls fn with every step q selects, in order, until fn's first
// error.
func (j *Journal) eachStep(ctx context.Context, op, q string, args []any, fn func(journal.Step) error) error {
	rows, err := j.pool.Query(ctx, q, args...)
	if err != nil {
		return j.fault(op, err, false)
	}
	defer rows.Close()
	for rows.Next() {
		var rev int64
		var lease *time.Time
		var record, body []byte
		var now time.Time
		if err := rows.Scan(&rev, &lease, &record, &body, &now); err != nil {
			return j.fault(op, err, false)
		}
		s, err := decodeStep(rev, lease, record, body)
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		s.ReadAt = now.UTC()
		if err := fn(*s); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return j.fault(op, err, false)
	}
	return nil
}

// ForEach calls fn with every step, oldest first, from one consistent
// snapshot (a REPEATABLE READ, read-only transaction); it stops at fn's
// first error.
func (j *Journal) ForEach(fn func(journal.Step) error) error {
	if err := j.begin("walk steps"); err != nil {
		return err
	}
	ctx := context.Background()
	tx, err := j.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return j.fault("walk steps", err, false)
	}
	defer tx.Rollback(ctx)
	rows, err := tx.Query(ctx, "SELECT "+stepColumns+", now() FROM steps s ORDER BY s.created_at, s.key")
	if err != nil {
		return j.fault("walk steps", err, false)
	}
	defer rows.Close()
	for rows.Next() {
		var rev int64
		var lease *time.Time
		var record, body []byte
		var now time.Time
		if err := rows.Scan(&rev, &lease, &record, &body, &now); err != nil {
			return j.fault("walk steps", err, false)
		}
		s, err := decodeStep(rev, lease, record, body)
		if err == nil {
			s.ReadAt = now.UTC()
		}
		if err != nil {
			return fmt.Errorf("walk steps: %w", err)
		}
		if err := fn(*s); err != nil {
			return err
		}
	}
	return j.fault("walk steps", rows.Err(), false)
}

// Count returns the numbers of steps by status and by hold. It counts the
// rows (an index-only scan of steps_status_idx at best), so its cost grows
// with the number of steps, unlike bbolt's counters: a counter row would
// serialize every writer of every replica.
func (j *Journal) Count() (journal.Counts, error) {
	c := journal.Counts{Status: map[journal.Status]int{}, Hold: map[journal.Hold]int{}}
	for s := journal.StatusPrepared; s <= journal.StatusFailed; s++ {
		c.Status[s] = 0
	}
	for h := journal.HoldNone; h <= journal.HoldNeedsReview; h++ {
		c.Hold[h] = 0
	}
	if err := j.begin("count steps"); err != nil {
		return c, err
	}
	ctx, cancel := j.opContext()
	defer cancel()
	rows, err := j.pool.Query(ctx, "SELECT status, hold, count(*) FROM steps GROUP BY status, hold")
	if err != nil {
		return c, j.fault("count steps", err, false)
	}
	defer rows.Close()
	for rows.Next() {
		var st, h int16
		var n int64
		if err := rows.Scan(&st, &h, &n); err != nil {
			return c, j.fault("count steps", err, false)
		}
		c.Status[journal.Status(st)] += int(n)
		c.Hold[journal.Hold(h)] += int(n)
		c.Steps += int(n)
	}
	return c, j.fault("count steps", rows.Err(), false)
}

// countOpenSQL counts started steps through steps_status_idx and held ones
// through the partial steps_hold_idx; hold 0 stands for the started count.
const countOpenSQL = `SELECT 0::smallint, count(*) FROM steps WHERE status = 2
UNION ALL SELECT hold, count(*) FROM steps WHERE hold <> 0 GROUP BY hold`

// CountOpen returns the numbers of started and held steps, from indexes:
// unlike Count, its cost does not grow with the finished steps.
func (j *Journal) CountOpen() (journal.OpenCounts, error) {
	c := journal.NewOpenCounts()
	if err := j.begin("count open steps"); err != nil {
		return c, err
	}
	ctx, cancel := j.opContext()
	defer cancel()
	rows, err := j.pool.Query(ctx, countOpenSQL)
	if err != nil {
		return c, j.fault("count open steps", err, false)
	}
	defer rows.Close()
	for rows.Next() {
		var h int16
		var n int64
		if err := rows.Scan(&h, &n); err != nil {
			return c, j.fault("count open steps", err, false)
		}
		if h == 0 {
			c.Started = int(n)
		} else {
			c.Held[journal.Hold(h)] = int(n)
		}
	}
	return c, j.fault("count open steps", rows.Err(), false)
}

// feedHorizon is the first seq the feed may not show yet: the oldest
// transaction still running may still commit events at or above it.
const feedHorizon = "(pg_snapshot_xmin(pg_current_snapshot())::text::bigint << 10)"

// Events returns up to limit events with seq > after, in seq order; limit
// 0 or less means 1000. It returns only events of finished transactions
// (see the package doc, "The event feed"), so a caller that continues after
// the last seq it got never misses an event that committed late. An empty
// result is a nil slice and no error.
func (j *Journal) Events(after uint64, limit int) ([]journal.Event, error) {
	if err := j.begin("list events"); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = defaultLimit
	}
	if after >= 1<<63 {
		return nil, nil
	}
	ctx, cancel := j.opContext()
	defer cancel()
	rows, err := j.pool.Query(ctx, `SELECT seq, key_seq, time, key, type, from_status, to_status,
		hold, reason, note, epoch, fence FROM events WHERE seq > $1 AND seq < `+feedHorizon+` ORDER BY seq LIMIT $2`,
		int64(after), limit)
	if err != nil {
		return nil, j.fault("list events", err, false)
	}
	defer rows.Close()
	var out []journal.Event
	for rows.Next() {
		var e journal.Event
		var seq, keySeq, epoch, fence int64
		var from, to, hold int16
		if err := rows.Scan(&seq, &keySeq, &e.Time, &e.Key, &e.Type, &from, &to, &hold, &e.Reason, &e.Note, &epoch, &fence); err != nil {
			return nil, j.fault("list events", err, false)
		}
		e.Seq, e.KeySeq, e.Epoch, e.Fence = uint64(seq), uint64(keySeq), uint64(epoch), uint64(fence)
		e.From, e.To, e.Hold, e.Time = journal.Status(from), journal.Status(to), journal.Hold(hold), e.Time.UTC()
		out = append(out, e)
	}
	return out, j.fault("list events", rows.Err(), false)
}

// LastSeq returns the seq of the latest event the feed shows; 0 when there
// is none.
func (j *Journal) LastSeq() (uint64, error) {
	if err := j.begin("read last event seq"); err != nil {
		return 0, err
	}
	var seq int64
	ctx, cancel := j.opContext()
	defer cancel()
	err := j.pool.QueryRow(ctx,
		"SELECT coalesce(max(seq), 0) FROM events WHERE seq < "+feedHorizon).Scan(&seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, j.fault("read last event seq", err, false)
	}
	return uint64(seq), nil
}
