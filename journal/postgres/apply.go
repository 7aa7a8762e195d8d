package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolguard/toolguard/journal"
)

const (
	// maxEvents bounds the events of one change: seq leaves 10 bits for
	// the events of one transaction.
	maxEvents = 1000
	// maxRecord bounds a step's stored size (record and body); bytea and
	// jsonb values cannot exceed 1 GiB.
	maxRecord = 512 << 20
)

// Apply reads the current record of key (one round trip, no commit; none
// when the journal has a hint of it, see hints.go), runs m on a private
// copy of it, and writes the Change m returns in one
// conditional statement that commits on its own under READ COMMITTED: the
// step (only if its Revision is still the one read), its events, numbered
// per key without gaps, and its workflow's counts. When another writer
// changed the step in between, the statement writes nothing and Apply reads
// again and runs m again: m may run more than once and must be a pure
// function of cur and of values captured before Apply.
//
// A change with Claim gets this journal's epoch, the step's Fence plus one,
// and LeaseUntil = the database's now() + Change.Lease (none when zero).
// Returned steps carry ReadAt, the database's clock when the record was
// read.
//
// Errors: the database cannot be reached, journal.ErrUnavailable (nothing
// was written); the connection broke after the write was sent,
// journal.ErrCommitUnknown (re-read the step before deciding anything).
// Mutation errors are returned as they are; a panic in m is re-raised.
func (j *Journal) Apply(ctx context.Context, key string, m journal.Mutation) (journal.Step, error) {
	if j.readOnly {
		return journal.Step{}, fmt.Errorf("apply step %s: %w", key, journal.ErrReadOnly)
	}
	if m == nil {
		return journal.Step{}, fmt.Errorf("apply step %s: %w: nil mutation", key, journal.ErrInvalidChange)
	}
	if err := j.begin("apply step " + key); err != nil {
		return journal.Step{}, err
	}
	h, hinted := j.hints.take(key)
	for ; ; hinted = false {
		if err := ctx.Err(); err != nil {
			return journal.Step{}, fmt.Errorf("apply step %s: %w", key, err)
		}
		cur, readAt, err := h.step, h.now(), error(nil)
		if hinted {
			if cur != nil {
				cur.ReadAt = readAt
			}
		} else if cur, readAt, err = j.read(ctx, key); err != nil {
			return journal.Step{}, fmt.Errorf("apply step %s: %w", key, err)
		}
		ch, err := run(key, m, cur)
		if hinted && err != nil {
			continue // decided on a hint, not written: decide on a read (hints.go)
		}
		if errors.Is(err, journal.ErrNoChange) {
			if cur == nil {
				return journal.Step{}, fmt.Errorf("apply step %s: %w", key, journal.ErrNotFound)
			}
			return *cur, nil
		}
		if err != nil {
			var fe *journal.FencedError
			if errors.As(err, &fe) {
				if fe.Key == "" {
					fe.Key = key
				}
				j.log.Warn("journal: stale write fenced off", "key", key, "held_epoch", fe.HeldEpoch,
					"held_fence", fe.HeldFence, "epoch", fe.Epoch, "fence", fe.Fence)
			}
			return journal.Step{}, err
		}
		w, err := j.prepare(key, cur, ch, readAt)
		if err != nil {
			return journal.Step{}, fmt.Errorf("apply step %s: %w", key, err)
		}
		w.hinted = hinted
		step, won, err := j.write(ctx, w)
		if err != nil {
			return journal.Step{}, err
		}
		if won {
			j.hints.put(key, &step, step.ReadAt)
			j.commits.Add(1)
			j.watch.signal(key)
			if final(&step) && w.watched {
				j.notify.add(key) // another replica waits for it (notify.go)
			}
			return step, nil
		}
		// Lost the race: another writer changed the step since the read.
	}
}

// run calls m with a private, deep copy of cur (so that cur is still the
// record read when m returns ErrNoChange after changing its copy), turning
// a panic into a re-raised panic that carries the key and stack.
func run(key string, m journal.Mutation, cur *journal.Step) (ch journal.Change, err error) {
	var arg *journal.Step
	if cur != nil {
		c := *cur
		if cur.Response != nil {
			r := *cur.Response
			r.Header, r.Body = r.Header.Clone(), bytes.Clone(r.Body)
			c.Response = &r
		}
		arg = &c
	}
	defer func() {
		if v := recover(); v != nil {
			panic(fmt.Sprintf("journal: mutation of step %s panicked: %v\n\n%s", key, v, debug.Stack()))
		}
	}()
	return m(arg)
}

// pending is a validated, stamped change ready to be written.
type pending struct {
	old     *journal.Step
	step    journal.Step
	record  []byte
	body    []byte
	claimed bool
	// hinted: old is a hint (hints.go), so the write also checks that the
	// row is the one the hint saw.
	hinted bool
	lease  time.Duration
	events []journal.Event
	flows  []flowDelta
	// budget and maxHolds limit the creation of the step (quota.go).
	budget   *journal.Budget
	maxHolds int
	// watched: a replica waits for the step (the write returns it; see
	// Watch).
	watched bool
}

// prepare validates ch and stamps the step; it writes nothing.
func (j *Journal) prepare(key string, cur *journal.Step, ch journal.Change, readAt time.Time) (*pending, error) {
	s := ch.Step
	if err := journal.Validate(key, &s); err != nil {
		return nil, err
	}
	if err := journal.AllowedChange(cur, &ch); err != nil && !j.anyTransition {
		return nil, err
	}
	now := readAt
	if j.opts.Now != nil {
		now = j.opts.Now()
	}
	now = now.UTC()
	s.Schema = journal.SchemaVersion
	s.CreatedAt, s.UpdatedAt = now, now
	s.Epoch, s.Fence, s.Revision, s.LeaseUntil = 0, 0, 0, time.Time{}
	var from journal.Status
	if cur != nil {
		s.CreatedAt, s.Epoch, s.Fence, s.Revision, s.LeaseUntil = cur.CreatedAt, cur.Epoch, cur.Fence, cur.Revision, cur.LeaseUntil
		from = cur.Status
		if journal.Replaces(cur, &s) {
			s.CreatedAt, from = now, journal.StatusUnknown
		}
	}
	if ch.Claim {
		s.Epoch, s.Fence, s.LeaseUntil = j.epoch, s.Fence+1, time.Time{}
	}
	if len(ch.Extra)+1 > maxEvents {
		return nil, fmt.Errorf("%w: %d events in one change (max %d)", journal.ErrInvalidChange, len(ch.Extra)+1, maxEvents)
	}
	typ := ch.Event
	if typ == "" {
		typ = journal.EventType(s.Status.String())
	}
	s.Budgeted = cur != nil && cur.Budgeted
	p := &pending{old: cur, claimed: ch.Claim, lease: ch.Lease}
	if cur == nil {
		// The count is made in the write's transaction (quota.go).
		p.budget, s.Budgeted = ch.Budget, ch.Budget != nil
		if s.Held() {
			p.maxHolds = ch.MaxHolds
		}
	}
	p.events = append(p.events, journal.Event{Time: now, Key: key, Type: typ, From: from, To: s.Status, Hold: s.Hold,
		Reason: ch.Reason, Note: ch.Note, Epoch: s.Epoch, Fence: s.Fence})
	for _, e := range ch.Extra {
		e.Time, e.Key, e.Epoch, e.Fence = now, key, s.Epoch, s.Fence
		e.From, e.To, e.Hold = s.Status, s.Status, s.Hold
		p.events = append(p.events, e)
	}
	for i := range p.events {
		p.events[i].KeySeq = s.Revision + uint64(i) + 1
	}
	s.ReadAt = readAt
	p.step = s
	p.step.Revision = s.Revision + uint64(len(p.events))
	var err error
	if p.record, p.body, err = encodeStep(&s); err != nil {
		return nil, err
	}
	p.flows = flowDeltas(cur, &p.step)
	return p, nil
}

// encodeStep splits s into its JSON record (without the response body,
// revision and lease, which are columns) and the response body.
func encodeStep(s *journal.Step) (record, body []byte, err error) {
	c := *s
	c.Revision, c.LeaseUntil = 0, time.Time{}
	if c.Response != nil {
		r := *c.Response
		body, r.Body = r.Body, nil
		c.Response = &r
	}
	record, err = json.Marshal(&c)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: encode step: %v", journal.ErrInvalidChange, err)
	}
	if len(record)+len(body) > maxRecord {
		return nil, nil, fmt.Errorf("%w: step record is %d bytes (max %d)", journal.ErrInvalidChange, len(record)+len(body), maxRecord)
	}
	return record, body, nil
}

// final reports a transition that ends a wait: an outcome or a hold.
func final(s *journal.Step) bool {
	return s.Status == journal.StatusCommitted || s.Status == journal.StatusVerified ||
		s.Status == journal.StatusFailed || s.Held()
}

// write runs the conditional statement of p. won is false when the step
// changed since it was read (nothing was written).
func (j *Journal) write(ctx context.Context, p *pending) (journal.Step, bool, error) {
	s := &p.step
	var readRev uint64
	stmt := j.sql.insert
	if p.old != nil {
		readRev, stmt = p.old.Revision, j.sql.update
	}
	n := len(p.events)
	types, froms, reasons, notes := make([]string, n), make([]int16, n), make([]string, n), make([]string, n)
	for i, e := range p.events {
		types[i], froms[i], reasons[i], notes[i] = string(e.Type), int16(e.From), e.Reason, e.Note
	}
	f := flowArrays(p.flows)
	var body any
	if len(p.body) > 0 {
		body = p.body
	}
	args := []any{
		s.Key, int64(s.Revision), int64(readRev), int16(s.Status), int16(s.Hold), s.Retryable, s.Workflow,
		int64(s.Epoch), int64(s.Fence), p.claimed, p.lease.Microseconds(), nullTime(s.VerifyBy), s.UpdatedAt,
		string(p.record), body, types, froms, reasons, notes, false, // NOTIFY: after the commit (notify.go)
		f.ids, f.steps, f.held, f.started, f.retryable, f.verifying, f.done, f.prepared,
		f.curStep, f.curRoute, f.inputHash, f.prompt, f.policy, j.channel, f.scopes,
	}
	if p.old != nil && p.hinted {
		stmt, args = j.sql.updateHinted, append(args, p.old.UpdatedAt)
	}
	if len(p.flows) == 0 {
		stmt, args = j.sql.lean(stmt, args)
	}
	var lease *time.Time
	var notified int64
	started := time.Now()
	var err error
	if p.limited() {
		err = j.writeLimited(ctx, p, stmt, args, &lease, &notified, &p.watched)
	} else {
		err = j.pool.QueryRow(ctx, stmt, args...).Scan(&lease, &notified, &p.watched)
	}
	if err == nil && j.opts.OnCommit != nil {
		j.opts.OnCommit(time.Since(started), 1)
	}
	switch {
	case errors.Is(err, journal.ErrOverBudget) || errors.Is(err, journal.ErrTooManyHolds):
		return journal.Step{}, false, fmt.Errorf("apply step %s: %w", s.Key, err)
	case errors.Is(err, pgx.ErrNoRows) || retryState(err):
		return journal.Step{}, false, nil
	case err != nil:
		return journal.Step{}, false, j.fault("write step "+s.Key, err, true)
	}
	out := *s
	out.LeaseUntil = time.Time{}
	if lease != nil {
		out.LeaseUntil = lease.UTC()
	}
	return out, true, nil
}

func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// Renew extends the lease of a step the caller still owns to the
// database's now() + d, in one statement: a started step, or a committed
// one whose verification is pending (journal.Step.Leasable). When the
// step's claim is no longer (epoch, fence), the step has nothing left to
// lease, or the step is gone, nothing is written and the
// error wraps journal.ErrFenced (a *journal.FencedError).
func (j *Journal) Renew(ctx context.Context, key string, epoch, fence uint64, d time.Duration) error {
	if j.readOnly {
		return fmt.Errorf("renew lease of %s: %w", key, journal.ErrReadOnly)
	}
	if err := j.begin("renew lease of " + key); err != nil {
		return err
	}
	tag, err := j.pool.Exec(ctx, `UPDATE steps SET lease_until = now() + $4 * interval '1 microsecond'
		WHERE key = $1 AND epoch = $2 AND fence = $3 AND (status = $5 OR (status = $6 AND verify_by IS NOT NULL))`,
		key, int64(epoch), int64(fence), d.Microseconds(), int16(journal.StatusStarted), int16(journal.StatusCommitted))
	if err != nil {
		return j.fault("renew lease of "+key, err, true)
	}
	if tag.RowsAffected() == 1 {
		j.commits.Add(1)
		return nil
	}
	// Not renewed: the step is gone, claimed again, or has nothing left to
	// lease (neither started nor committed with a pending verification).
	fe := &journal.FencedError{Key: key, HeldEpoch: epoch, HeldFence: fence, Missing: true}
	var e, f int64
	err = j.pool.QueryRow(ctx, "SELECT epoch, fence FROM steps WHERE key = $1", key).Scan(&e, &f)
	if err == nil {
		fe.Epoch, fe.Fence, fe.Missing = uint64(e), uint64(f), false
	}
	j.log.Warn("journal: stale lease renewal fenced off", "key", key, "held_epoch", epoch, "held_fence", fence,
		"epoch", fe.Epoch, "fence", fe.Fence)
	return fe
}
