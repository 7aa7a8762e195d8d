package postgres

import "strings"

// statements are the SQL texts of the hot path, built once.
type statements struct {
	insert, update string
	// updateHinted is update, also conditional on the step's updated_at
	// ($36): a step written on a hint (hints.go) must be the very row the
	// hint saw, not one deleted and created again since.
	updateHinted string
	// The lean variants write the step and its events only, for a
	// transition that changes no workflow's counts (most calls have no
	// workflow): PostgreSQL builds the executor state of every part of a
	// statement on each run, and the workflow parts are most of it. They
	// take $1-$19 of the full ones; the hinted one's updated_at is $20.
	leanInsert, leanUpdate, leanUpdateHinted string
}

// The write of a transition is one statement: the step (s), its events
// (e), its workflows' counts (w) and, when $20 asks for it, a NOTIFY (n).
// toolguard passes false: a NOTIFY inside the write's transaction would
// serialise commits on PostgreSQL's notification lock, so the notifier
// sends it after the commit (notify.go), and only for a step that a
// replica waits for: the statement returns the step's watched flag.
// Every part reads s, so a step write that matches no row (a lost race)
// writes nothing else. Parameters:
//
//	$1 key, $2 new revision, $3 revision read, $4 status, $5 hold,
//	$6 retryable, $7 workflow, $8 epoch, $9 fence, $10 claim, $11 lease
//	(µs), $12 verify_by, $13 time, $14 record, $15 response body,
//	$16-$19 the events' type, from, reason and note, $20 notify,
//	$21-$33 the workflow deltas, $34 the NOTIFY channel, $35 the workflow
//	deltas' scopes.
//
// An event's seq is its transaction's id times 1024 plus its ordinal (see
// the package doc, "The event feed"). A step that is the first of its
// scope in a workflow adopts the empty scope's record of the id when that
// counts no step (a, as bolt.Journal does): a checkpoint written before any
// call, without a scope, is the first caller's.
const (
	insertStep = `INSERT INTO steps (key, revision, status, hold, retryable, workflow, epoch, fence,
		lease_until, verify_by, created_at, updated_at, record, response_body)
	VALUES ($1, $2, $4, $5, $6, $7, $8, $9,
		CASE WHEN $10::boolean AND $11::bigint > 0 THEN now() + $11::bigint * interval '1 microsecond' END,
		$12, $13, $13, $14::jsonb, $15)
	ON CONFLICT (key) DO NOTHING
	RETURNING key, lease_until, watched`

	updateStep = `UPDATE steps SET revision = $2, status = $4, hold = $5, retryable = $6, workflow = $7,
		epoch = $8, fence = $9,
		lease_until = CASE WHEN NOT $10::boolean THEN lease_until
			WHEN $11::bigint > 0 THEN now() + $11::bigint * interval '1 microsecond' END,
		verify_by = $12, updated_at = $13, record = $14::jsonb, response_body = $15
	WHERE key = $1 AND revision = $3::bigint
	RETURNING key, lease_until, watched`

	writeEvents = `,
e AS (
	INSERT INTO events (seq, xid, key, key_seq, time, type, from_status, to_status, hold, reason, note, epoch, fence)
	SELECT (pg_current_xact_id()::text::bigint << 10) + x.n, pg_current_xact_id(), s.key, $3::bigint + x.n, $13,
		x.type, x.from_status, $4, $5, x.reason, x.note, $8, $9
	FROM s, unnest($16::text[], $17::smallint[], $18::text[], $19::text[])
		WITH ORDINALITY AS x(type, from_status, reason, note, n)
)`

	writeRest = writeEvents + `,
a AS (
	DELETE FROM workflows o
	USING (SELECT DISTINCT x.id, x.scope FROM s, unnest($21::text[], $35::text[]) AS x(id, scope) WHERE x.scope <> '') x
	WHERE o.id = x.id AND o.scope = '' AND o.steps = 0
		AND NOT EXISTS (SELECT 1 FROM workflows y WHERE y.id = x.id AND y.scope = x.scope)
	RETURNING o.id, o.version, o.checkpoint, o.checkpoint_at, o.created_at
),
w AS (
	INSERT INTO workflows AS wf (id, scope, version, steps, held, started, retryable, verifying, done, prepared,
		current_step, current_route, input_hash, prompt_version, policy_version, checkpoint, checkpoint_at,
		created_at, updated_at)
	SELECT d.id, d.scope, coalesce(a.version, 0) + 1, d.steps, d.held, d.started, d.retryable, d.verifying, d.done, d.prepared,
		d.cur_step, d.cur_route, d.input_hash, d.prompt, d.policy, a.checkpoint, a.checkpoint_at,
		coalesce(a.created_at, $13), $13
	FROM s, unnest($21::text[], $22::int[], $23::int[], $24::int[], $25::int[], $26::int[], $27::int[], $28::int[],
		$29::text[], $30::text[], $31::text[], $32::text[], $33::text[], $35::text[])
		AS d(id, steps, held, started, retryable, verifying, done, prepared, cur_step, cur_route, input_hash, prompt, policy, scope)
		LEFT JOIN a ON a.id = d.id AND d.scope <> ''
	ON CONFLICT (id, scope) DO UPDATE SET
		version = wf.version + 1,
		steps = wf.steps + EXCLUDED.steps,
		held = wf.held + EXCLUDED.held,
		started = wf.started + EXCLUDED.started,
		retryable = wf.retryable + EXCLUDED.retryable,
		verifying = wf.verifying + EXCLUDED.verifying,
		done = wf.done + EXCLUDED.done,
		prepared = wf.prepared + EXCLUDED.prepared,
		current_step = CASE WHEN EXCLUDED.current_step <> '' THEN EXCLUDED.current_step ELSE wf.current_step END,
		current_route = CASE WHEN EXCLUDED.current_step <> '' THEN EXCLUDED.current_route ELSE wf.current_route END,
		input_hash = CASE WHEN wf.input_hash = '' THEN EXCLUDED.input_hash ELSE wf.input_hash END,
		prompt_version = CASE WHEN EXCLUDED.prompt_version <> '' THEN EXCLUDED.prompt_version ELSE wf.prompt_version END,
		policy_version = CASE WHEN EXCLUDED.policy_version <> '' THEN EXCLUDED.policy_version ELSE wf.policy_version END,
		updated_at = EXCLUDED.updated_at
),
n AS (
	SELECT pg_notify($34, s.key) FROM s WHERE $20::boolean
)
SELECT s.lease_until, (SELECT count(*) FROM n), s.watched FROM s`

	leanRest = writeEvents + `
SELECT s.lease_until, 0::bigint, s.watched FROM s`
)

func newStatements() statements {
	hinted := func(n string) string {
		return strings.Replace(updateStep, "revision = $3::bigint",
			"revision = $3::bigint AND updated_at = $"+n+"::timestamptz", 1)
	}
	return statements{
		insert:           "WITH s AS (" + insertStep + ")" + writeRest,
		update:           "WITH s AS (" + updateStep + ")" + writeRest,
		updateHinted:     "WITH s AS (" + hinted("36") + ")" + writeRest,
		leanInsert:       "WITH s AS (" + insertStep + ")" + leanRest,
		leanUpdate:       "WITH s AS (" + updateStep + ")" + leanRest,
		leanUpdateHinted: "WITH s AS (" + hinted("20") + ")" + leanRest,
	}
}

// leanArgs is the number of parameters the lean statements take, besides
// the hinted one's updated_at.
const leanArgs = 19

// lean returns the lean variant of the full statement stmt and its
// arguments, for a write that changes no workflow.
func (q *statements) lean(stmt string, args []any) (string, []any) {
	lean := args[:leanArgs:leanArgs]
	switch stmt {
	case q.insert:
		return q.leanInsert, lean
	case q.update:
		return q.leanUpdate, lean
	default: // updateHinted, whose last argument is the step's updated_at
		return q.leanUpdateHinted, append(lean, args[len(args)-1])
	}
}
