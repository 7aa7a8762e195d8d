-- Holds and budgets. The record field budgeted marks a step whose creation
-- counted against its route's budget (journal.Change.Budget); a budget
-- counts those of one caller, API and route created within its window.
CREATE INDEX steps_budget_idx ON steps ((coalesce(record->>'credential_mac', '')), (record->>'api'), (record->>'route'), created_at)
	WHERE record->>'budgeted' = 'true';
-- A caller's open holds (journal.Change.MaxHolds).
CREATE INDEX steps_caller_hold_idx ON steps ((coalesce(record->>'credential_mac', ''))) WHERE hold <> 0;
-- Holds for approval never sent, oldest first: what ExpireHolds removes.
CREATE INDEX steps_expiry_idx ON steps (updated_at) WHERE hold = 1 AND status = 1;
