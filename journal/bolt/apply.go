package bolt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"go.etcd.io/bbolt"

	"github.com/toolguard/toolguard/journal"
)

// Log keys.
const (
	logKey       = "key"
	logHeldEpoch = "held_epoch"
	logHeldFence = "held_fence"
	logEpoch     = "epoch"
	logFence     = "fence"
)

// Apply runs m once, inside a write transaction, on the current record of
// key, writes the Change it returns (the step, its index entries and an
// event), commits durably and returns the step as written.
//
// Concurrent Applies share commits: each waits for the commit in progress,
// and the next commit takes everything queued meanwhile, in arrival order
// (see "Group commit" in the package doc). Within a commit, each mutation
// sees the writes of the mutations before it, so Applies of one key are
// sequential. An error of one mutation affects only its caller. If the
// commit fails, every Apply of that commit returns its error and nothing of
// it is written; no mutation is ever run twice.
//
// ctx is checked only before the request is queued: once queued, Apply waits
// for the commit, which is short. Mutation errors are returned as they are;
// the journal's own are wrapped with the key.
func (b *Journal) Apply(ctx context.Context, key string, m journal.Mutation) (journal.Step, error) {
	if b.readOnly {
		return journal.Step{}, fmt.Errorf("apply step %s: %w", key, journal.ErrReadOnly)
	}
	if m == nil {
		return journal.Step{}, fmt.Errorf("apply step %s: %w: nil mutation", key, journal.ErrInvalidChange)
	}
	if err := ctx.Err(); err != nil {
		return journal.Step{}, fmt.Errorf("apply step %s: %w", key, err)
	}
	r := &request{key: key, m: m, done: make(chan struct{})}
	if !b.submit(r) {
		return journal.Step{}, fmt.Errorf("apply step %s: %w", key, journal.ErrClosed)
	}
	if r.panic != nil {
		panic(r.panic)
	}
	var fe *journal.FencedError
	if errors.As(r.err, &fe) {
		b.log.Warn("journal: stale write fenced off", logKey, key,
			logHeldEpoch, fe.HeldEpoch, logHeldFence, fe.HeldFence, logEpoch, fe.Epoch, logFence, fe.Fence)
	}
	return r.step, r.err
}

// applyOne runs one request inside the batch transaction and sets its
// result. Everything that can fail for this request alone (decoding,
// the mutation, validation, encoding) happens before its first write, so a
// failing request leaves nothing behind. It returns wrote=true when it wrote,
// and a non-nil error only when a write failed, which spoils the whole
// transaction.
func (b *Journal) applyOne(bk *buckets, r *request) (wrote bool, err error) {
	cur, ref, ok := b.recent.take(r.key)
	if !ok {
		cur, ref, err = bk.loadStep(r.key)
	}
	if err != nil && !errors.Is(err, journal.ErrNotFound) {
		r.err = fmt.Errorf("apply step %s: %w", r.key, err)
		return false, nil
	}
	if cur != nil {
		cur.ReadAt = b.now().UTC()
	}
	ch, err := r.run(cur)
	if errors.Is(err, journal.ErrNoChange) {
		// Decode again: the mutation may have modified its copy in depth.
		cur, err = bk.getStep(r.key)
		if err == nil {
			r.step = *cur
			r.step.ReadAt = b.now().UTC()
		}
		r.err = wrapKey(r.key, err)
		return false, nil
	}
	if err != nil {
		var fe *journal.FencedError
		if errors.As(err, &fe) && fe.Key == "" {
			fe.Key = r.key
		}
		r.err = err
		return false, nil
	}
	w, err := b.prepare(bk, r.key, cur, ch)
	if err != nil {
		r.err = fmt.Errorf("apply step %s: %w", r.key, err)
		return false, nil
	}
	w.ref = ref
	if err := w.write(bk); err != nil {
		return true, fmt.Errorf("write step %s: %w", r.key, err)
	}
	r.pending = w
	r.step = w.step
	r.step.ReadAt = w.step.UpdatedAt
	r.wrote = true
	return true, nil
}

func wrapKey(key string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("apply step %s: %w", key, err)
}

// run calls the mutation with a private copy of cur, turning a panic into
// r.panic. The copy is shallow: cur keeps the fields that locate its index
// entries, whatever the mutation does.
func (r *request) run(cur *journal.Step) (ch journal.Change, err error) {
	var arg *journal.Step
	if cur != nil {
		c := *cur
		arg = &c
	}
	defer func() {
		if v := recover(); v != nil {
			r.panic = &panicError{key: r.key, value: v, stack: debug.Stack()}
			err = r.panic
		}
	}()
	return r.m(arg)
}

// pending is a validated, stamped change ready to be written.
type pending struct {
	old     *journal.Step
	ref     stepRef // where old is stored
	step    journal.Step
	data    []byte
	event   journal.Event
	extra   []journal.Event
	claimed bool
	// eventJSON is event as write stored it, which the log reuses.
	eventJSON []byte
}

// prepare validates ch and stamps the step; it writes nothing.
func (b *Journal) prepare(bk *buckets, key string, cur *journal.Step, ch journal.Change) (*pending, error) {
	// The step is stamped where it is kept, so that it is copied once.
	p := &pending{old: cur, step: ch.Step, claimed: ch.Claim}
	s := &p.step
	if err := journal.Validate(key, s); err != nil {
		return nil, err
	}
	if err := journal.AllowedChange(cur, &ch); err != nil && !b.anyTransition {
		return nil, err
	}
	now := b.now().UTC()
	s.Schema = journal.SchemaVersion
	s.CreatedAt, s.UpdatedAt = now, now
	s.Epoch, s.Fence, s.Revision = 0, 0, 0
	// bbolt keeps leases in the process (see flights in package proxy).
	s.LeaseUntil, s.ReadAt = time.Time{}, time.Time{}
	var from journal.Status
	if cur != nil {
		s.CreatedAt, s.Epoch, s.Fence, s.Revision = cur.CreatedAt, cur.Epoch, cur.Fence, cur.Revision
		from = cur.Status
		if journal.Replaces(cur, s) {
			s.CreatedAt, from = now, journal.StatusUnknown
		}
	}
	if ch.Claim {
		s.Epoch, s.Fence = b.epoch, getUint(bk.meta, keyFence)+1
	}
	s.Budgeted = cur != nil && cur.Budgeted
	if cur == nil {
		if err := bk.checkQuota(s, &ch); err != nil {
			return nil, err
		}
	}
	typ := ch.Event
	if typ == "" {
		typ = journal.EventType(s.Status.String())
	}
	// The events are numbered per key from the revision the step had.
	rev := s.Revision
	s.Revision += uint64(1 + len(ch.Extra))
	data, err := marshalStep(s)
	if err != nil {
		return nil, fmt.Errorf("%w: encode step: %v", journal.ErrInvalidChange, err)
	}
	if int64(len(data)) > bbolt.MaxValueSize {
		return nil, fmt.Errorf("%w: step record is %d bytes", journal.ErrInvalidChange, len(data))
	}
	p.data = data
	p.event = journal.Event{
		KeySeq: rev + 1, Time: now, Key: key, Type: typ, From: from, To: s.Status, Hold: s.Hold,
		Reason: ch.Reason, Note: ch.Note, Epoch: s.Epoch, Fence: s.Fence,
	}
	for i, e := range ch.Extra {
		e.KeySeq = rev + 2 + uint64(i)
		e.Time, e.Key, e.Epoch, e.Fence = now, key, s.Epoch, s.Fence
		e.From, e.To, e.Hold = s.Status, s.Status, s.Hold
		p.extra = append(p.extra, e)
	}
	return p, nil
}

// write puts the step, its index entries, the counters, the fence counter
// and the event.
func (p *pending) write(bk *buckets) error {
	if err := bk.putStep(p.step.Key, &p.ref, p.data); err != nil {
		return err
	}
	if err := bk.reindex(p.old, &p.step); err != nil {
		return err
	}
	if p.claimed {
		if err := putUint(bk.meta, keyFence, p.step.Fence); err != nil {
			return err
		}
	}
	seq, err := bk.events.NextSequence()
	if err != nil {
		return fmt.Errorf("next event seq: %w", err)
	}
	p.event.Seq = seq
	data, err := json.Marshal(&p.event)
	if err != nil {
		return fmt.Errorf("encode event: %w", err)
	}
	if err := bk.events.Put(seqKey(seq), data); err != nil {
		return err
	}
	p.eventJSON = data
	for _, e := range p.extra {
		if err := bk.appendEvent(e); err != nil {
			return err
		}
	}
	if p.step.Workflow != "" {
		if err := bk.touchWorkflow(p.step.CredentialMAC, p.step.Workflow, p.old, &p.step, p.event.Time); err != nil {
			return err
		}
	}
	if o := p.old; o != nil && o.Workflow != "" && (o.Workflow != p.step.Workflow || o.CredentialMAC != p.step.CredentialMAC) {
		return bk.touchWorkflow(o.CredentialMAC, o.Workflow, o, nil, p.event.Time)
	}
	return nil
}

// appendEvent writes e with the next seq.
func (bk *buckets) appendEvent(e journal.Event) error {
	seq, err := bk.events.NextSequence()
	if err != nil {
		return fmt.Errorf("next event seq: %w", err)
	}
	e.Seq = seq
	data, err := json.Marshal(&e)
	if err != nil {
		return fmt.Errorf("encode event: %w", err)
	}
	return bk.events.Put(seqKey(seq), data)
}
