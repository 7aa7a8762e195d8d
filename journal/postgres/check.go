package postgres

import (
	"context"
	"fmt"

	"github.com/toolguard/toolguard/journal"
)

// maxCheckErrors bounds the problems one invariant reports.
const maxCheckErrors = 100

// invariants are SQL queries that return one text row per problem found.
var invariants = []struct{ name, query string }{
	{"schema version", `SELECT 'schema is at version ' || coalesce(max(version), 0) || ', want ` +
		fmt.Sprint(SchemaVersion) + `' FROM schema_version HAVING coalesce(max(version), 0) <> ` + fmt.Sprint(SchemaVersion)},
	{"step record", `SELECT 'step ' || key || ': record says key ' || coalesce(record->>'key', 'none')
		|| ', status ' || coalesce(record->>'status', 'none') || ', hold ' || coalesce(record->>'hold', 'none')
		FROM steps WHERE record->>'key' IS DISTINCT FROM key
		OR record->>'status' IS DISTINCT FROM (ARRAY['prepared','started','committed','verified','failed'])[status]
		OR coalesce(record->>'hold', '') IS DISTINCT FROM (ARRAY['','awaiting_approval','needs_review'])[hold + 1]
		OR coalesce(record->>'workflow', '') <> workflow
		OR (record->>'epoch')::bigint <> epoch OR (record->>'fence')::bigint <> fence`},
	{"outcome", `SELECT 'step ' || key || ': ' || (ARRAY['prepared','started','committed','verified','failed'])[status]
		|| ' without a response or evidence' FROM steps
		WHERE status IN (3, 4) AND record->'response' IS NULL AND coalesce(record->>'evidence', '') = ''`},
	{"response body", `SELECT 'step ' || key || ': a response body without a response' FROM steps
		WHERE response_body IS NOT NULL AND record->'response' IS NULL`},
	{"epoch", `SELECT 'step ' || key || ': epoch ' || epoch || ' was never handed out (last ' || e.last_value || ')'
		FROM steps, epochs e WHERE steps.epoch > e.last_value OR (steps.epoch > 0 AND NOT e.is_called)`},
	{"claim", `SELECT 'step ' || key || ': fence ' || fence || ' with epoch ' || epoch FROM steps
		WHERE (epoch = 0) <> (fence = 0)`},
	{"revision", `SELECT 'step ' || s.key || ': revision ' || s.revision || ' but events up to ' || max(e.key_seq)
		FROM steps s JOIN events e ON e.key = s.key AND e.time >= s.created_at
		GROUP BY s.key, s.revision HAVING max(e.key_seq) > s.revision`},
	{"event numbering", `SELECT 'events of ' || key || ': key_seq ' || key_seq || ' recorded ' || count(*) || ' times'
		FROM events e WHERE EXISTS (SELECT 1 FROM steps s WHERE s.key = e.key AND e.time >= s.created_at)
		GROUP BY key, key_seq, (SELECT created_at FROM steps s WHERE s.key = e.key) HAVING count(*) > 1`},
	{"event seq", `SELECT 'event ' || seq || ': seq does not match its transaction ' || xid FROM events
		WHERE seq >> 10 <> xid::text::bigint`},
	{"workflow counts", `WITH c AS (
			SELECT workflow AS id, coalesce(record->>'credential_mac', '') AS scope, count(*) AS steps,
				count(*) FILTER (WHERE hold <> 0) AS held,
				count(*) FILTER (WHERE hold = 0 AND status = 2) AS started,
				count(*) FILTER (WHERE hold = 0 AND status = 5 AND retryable) AS retryable,
				count(*) FILTER (WHERE hold = 0 AND status = 3 AND verify_by IS NOT NULL) AS verifying,
				count(*) FILTER (WHERE hold = 0 AND (status = 4 OR (status = 3 AND verify_by IS NULL)
					OR (status = 5 AND NOT retryable))) AS done,
				count(*) FILTER (WHERE hold = 0 AND (status = 1)) AS prepared
			FROM steps WHERE workflow <> '' GROUP BY 1, 2)
		SELECT 'workflow ' || coalesce(w.id, c.id) || CASE WHEN coalesce(w.scope, c.scope) <> '' THEN ' scope ' || coalesce(w.scope, c.scope) ELSE '' END || ': counts ' ||
			CASE WHEN w.id IS NULL THEN 'missing' ELSE
				format('%s/%s/%s/%s/%s/%s/%s', w.steps, w.held, w.started, w.retryable, w.verifying, w.done, w.prepared) END
			|| ', steps say ' || CASE WHEN c.id IS NULL THEN 'none' ELSE
				format('%s/%s/%s/%s/%s/%s/%s', c.steps, c.held, c.started, c.retryable, c.verifying, c.done, c.prepared) END
		FROM workflows w FULL JOIN c ON c.id = w.id AND c.scope = w.scope
		WHERE (w.id IS NULL) OR (c.id IS NULL AND w.steps <> 0) OR (c.id IS NOT NULL AND
			(w.steps, w.held, w.started, w.retryable, w.verifying, w.done, w.prepared) IS DISTINCT FROM
			(c.steps, c.held, c.started, c.retryable, c.verifying, c.done, c.prepared))`},
}

// Check verifies the invariants SQL can see and returns every problem
// found, or nil: the schema version; every step's JSON record agrees with
// its columns (key, status, hold, workflow, epoch, fence); committed and
// verified steps have a response or evidence; no epoch above the epochs
// sequence; epoch and fence set together; no event of a step's current
// life numbered above its revision or twice; event seqs match their
// transaction; every workflow's counts match its steps. Each error names
// the key (or seq, or workflow). Constraints the schema declares (primary
// keys, CHECKs) are PostgreSQL's to keep and not checked again.
func (j *Journal) Check() []error {
	if err := j.begin("check journal"); err != nil {
		return []error{err}
	}
	ctx := context.Background()
	var errs []error
	for _, inv := range invariants {
		rows, err := j.pool.Query(ctx, inv.query+fmt.Sprintf(" LIMIT %d", maxCheckErrors+1))
		if err != nil {
			errs = append(errs, classify("check "+inv.name, err, false))
			continue
		}
		n := 0
		for rows.Next() {
			var msg string
			if err := rows.Scan(&msg); err != nil {
				errs = append(errs, classify("check "+inv.name, err, false))
				break
			}
			if n++; n > maxCheckErrors {
				errs = append(errs, fmt.Errorf("%s: … and more problems", inv.name))
				break
			}
			errs = append(errs, fmt.Errorf("%w: %s", journal.ErrCorrupt, msg))
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			errs = append(errs, classify("check "+inv.name, err, false))
		}
	}
	return errs
}
