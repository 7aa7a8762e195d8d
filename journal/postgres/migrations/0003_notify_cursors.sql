-- notify_cursors: for each webhook of hold notifications (named after a
-- hash of its URL), the seq of the last event of the feed its replicas
-- handled. Moved by compare-and-set only, under the webhook's advisory
-- lock (RunExclusive).
CREATE TABLE notify_cursors (
	name       text PRIMARY KEY,
	seq        bigint      NOT NULL CHECK (seq >= 0),
	updated_at timestamptz NOT NULL DEFAULT now()
);
