-- Workflows are scoped by their caller: one record per (id, scope), the
-- scope being the credential MAC of the steps' caller (the steps' record
-- field credential_mac; '' for callers without a credential). Records
-- written before counted every caller's steps under the id: they are split
-- here, counted afresh from the steps. An old record's checkpoint moves to
-- its id's one scope; when the id has steps in several scopes it stays in
-- the empty scope.
ALTER TABLE workflows ADD COLUMN scope text NOT NULL DEFAULT '';
ALTER TABLE workflows DROP CONSTRAINT workflows_pkey;
ALTER TABLE workflows ADD PRIMARY KEY (id, scope);

CREATE TEMPORARY TABLE flow_counts ON COMMIT DROP AS
SELECT workflow AS id, coalesce(record->>'credential_mac', '') AS scope, count(*)::int AS steps,
	(count(*) FILTER (WHERE hold <> 0))::int AS held,
	(count(*) FILTER (WHERE hold = 0 AND status = 2))::int AS started,
	(count(*) FILTER (WHERE hold = 0 AND status = 5 AND retryable))::int AS retryable,
	(count(*) FILTER (WHERE hold = 0 AND status = 3 AND verify_by IS NOT NULL))::int AS verifying,
	(count(*) FILTER (WHERE hold = 0 AND (status = 4 OR (status = 3 AND verify_by IS NULL)
		OR (status = 5 AND NOT retryable))))::int AS done,
	(count(*) FILTER (WHERE hold = 0 AND status = 1))::int AS prepared,
	(array_agg(key ORDER BY updated_at DESC))[1] AS cur_step,
	(array_agg(coalesce(record->>'route', '') ORDER BY updated_at DESC))[1] AS cur_route
FROM steps WHERE workflow <> '' GROUP BY 1, 2;

-- The ids whose steps have a scope: only their records change.
CREATE TEMPORARY TABLE scoped_ids ON COMMIT DROP AS
SELECT id, count(*) AS scopes FROM flow_counts WHERE scope <> '' GROUP BY id;

INSERT INTO workflows (id, scope, version, current_step, current_route, input_hash, prompt_version, policy_version,
	steps, held, started, retryable, verifying, done, prepared, created_at, updated_at)
SELECT c.id, c.scope, coalesce(w.version, 0) + 1, c.cur_step, c.cur_route, coalesce(w.input_hash, ''),
	coalesce(w.prompt_version, ''), coalesce(w.policy_version, ''),
	c.steps, c.held, c.started, c.retryable, c.verifying, c.done, c.prepared,
	coalesce(w.created_at, now()), coalesce(w.updated_at, now())
FROM flow_counts c LEFT JOIN workflows w ON w.id = c.id AND w.scope = ''
WHERE c.scope <> '';

-- The empty scope keeps only the steps without a credential.
UPDATE workflows w SET version = w.version + 1,
	steps = coalesce(c.steps, 0), held = coalesce(c.held, 0), started = coalesce(c.started, 0),
	retryable = coalesce(c.retryable, 0), verifying = coalesce(c.verifying, 0), done = coalesce(c.done, 0),
	prepared = coalesce(c.prepared, 0)
FROM scoped_ids s LEFT JOIN flow_counts c ON c.id = s.id AND c.scope = ''
WHERE w.id = s.id AND w.scope = '';

-- A checkpoint of an id with one scope, and no step without a credential,
-- moves to that scope.
UPDATE workflows w SET checkpoint = o.checkpoint, checkpoint_at = o.checkpoint_at, version = w.version + 1
FROM workflows o JOIN scoped_ids s ON s.id = o.id AND s.scopes = 1
WHERE o.scope = '' AND o.steps = 0 AND o.checkpoint IS NOT NULL AND w.id = o.id AND w.scope <> '';
UPDATE workflows o SET checkpoint = NULL, checkpoint_at = NULL
FROM scoped_ids s WHERE s.id = o.id AND s.scopes = 1 AND o.scope = '' AND o.steps = 0;

-- Empty records left in the empty scope go.
DELETE FROM workflows o USING scoped_ids s
WHERE o.id = s.id AND o.scope = '' AND o.steps = 0 AND o.checkpoint IS NULL;
