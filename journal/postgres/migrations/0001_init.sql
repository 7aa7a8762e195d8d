-- toolguard journal schema, version 1. Every statement runs in the schema
-- named by the search_path of the migrating connection.

-- meta holds single values: the fingerprint of the shared HMAC secret.
CREATE TABLE meta (
	name  text PRIMARY KEY,
	value text NOT NULL
);

-- epochs hands every writable Open a number unique across replicas and
-- restarts.
CREATE SEQUENCE epochs;

-- steps: one row per idempotency key. record is the step as JSON without
-- its response body (kept in response_body as bytea), its revision and its
-- lease, which are columns; the other columns repeat record's fields that
-- queries filter or order on.
CREATE TABLE steps (
	key           text PRIMARY KEY,
	revision      bigint      NOT NULL,
	status        smallint    NOT NULL CHECK (status BETWEEN 1 AND 5),
	hold          smallint    NOT NULL CHECK (hold BETWEEN 0 AND 2),
	retryable     boolean     NOT NULL,
	workflow      text        NOT NULL,
	epoch         bigint      NOT NULL,
	fence         bigint      NOT NULL,
	lease_until   timestamptz,
	verify_by     timestamptz,
	created_at    timestamptz NOT NULL,
	updated_at    timestamptz NOT NULL,
	record        jsonb       NOT NULL,
	response_body bytea
);

-- Holds (the review queue), in key order.
CREATE INDEX steps_hold_idx ON steps (hold, key) WHERE hold <> 0;
-- A status, least recently updated first (List by status, the started
-- steps the resolver looks at).
CREATE INDEX steps_status_idx ON steps (status, updated_at);
-- All steps, most recently updated first (List without a filter).
CREATE INDEX steps_updated_idx ON steps (updated_at);
-- Pending verifications, earliest deadline first.
CREATE INDEX steps_verify_idx ON steps (verify_by) WHERE verify_by IS NOT NULL;
-- A workflow's steps, in key order.
CREATE INDEX steps_workflow_idx ON steps (workflow, key) WHERE workflow <> '';
-- Retention: the finished steps a sweep may remove, oldest first.
CREATE INDEX steps_sweep_idx ON steps (updated_at)
	WHERE hold = 0 AND verify_by IS NULL AND (status IN (3, 4) OR (status = 5 AND NOT retryable));

-- events: the append-only log. seq orders the global feed and is derived
-- from the writing transaction's id (see the package doc, "The event feed");
-- key_seq numbers a key's events without gaps.
CREATE TABLE events (
	seq         bigint      PRIMARY KEY,
	xid         xid8        NOT NULL,
	key         text        NOT NULL,
	key_seq     bigint      NOT NULL,
	time        timestamptz NOT NULL,
	type        text        NOT NULL,
	from_status smallint    NOT NULL,
	to_status   smallint    NOT NULL,
	hold        smallint    NOT NULL,
	reason      text        NOT NULL,
	note        text        NOT NULL,
	epoch       bigint      NOT NULL,
	fence       bigint      NOT NULL
);
-- A key's events in order.
CREATE INDEX events_key_idx ON events (key, key_seq);
-- Retention of events, oldest first.
CREATE INDEX events_time_idx ON events (time);

-- workflows: the record of the steps sharing a Toolguard-Workflow value,
-- with their counts by class kept in the same statements that change the
-- steps; status is derived from the counts.
CREATE TABLE workflows (
	id             text        PRIMARY KEY,
	version        bigint      NOT NULL,
	current_step   text        NOT NULL DEFAULT '',
	current_route  text        NOT NULL DEFAULT '',
	input_hash     text        NOT NULL DEFAULT '',
	prompt_version text        NOT NULL DEFAULT '',
	policy_version text        NOT NULL DEFAULT '',
	steps          integer     NOT NULL DEFAULT 0,
	held           integer     NOT NULL DEFAULT 0,
	started        integer     NOT NULL DEFAULT 0,
	retryable      integer     NOT NULL DEFAULT 0,
	verifying      integer     NOT NULL DEFAULT 0,
	done           integer     NOT NULL DEFAULT 0,
	prepared       integer     NOT NULL DEFAULT 0,
	status         text        NOT NULL GENERATED ALWAYS AS (CASE
		WHEN held > 0 THEN 'awaiting_approval'
		WHEN started > 0 THEN 'executing'
		WHEN retryable > 0 THEN 'failed_retryable'
		WHEN verifying > 0 THEN 'verifying'
		WHEN done > 0 AND prepared = 0 THEN 'completed'
		ELSE 'planned' END) STORED,
	checkpoint     bytea,
	checkpoint_at  timestamptz,
	created_at     timestamptz NOT NULL,
	updated_at     timestamptz NOT NULL
);
