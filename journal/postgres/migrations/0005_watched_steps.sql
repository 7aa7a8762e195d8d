-- A step that a replica waits for. Watch sets it; the final transition of
-- a watched step returns it, and only then is a NOTIFY sent after the
-- commit (notify.go): a call nobody waits for costs no statement more.
ALTER TABLE steps ADD COLUMN watched boolean NOT NULL DEFAULT false;
