-- The sweep looks at a suspended run when its next reminder is due or when
-- it expires, whichever comes first (`RunRecord::wakes_at`): the column
-- that held the expiry alone, whose only use was the sweep, now holds that.
-- A run suspended before reminders has none: it wakes at its expiry.
ALTER TABLE runs RENAME COLUMN expires_at TO wakes_at;
DROP INDEX runs_suspended_by_expiry;
CREATE INDEX runs_suspended_by_wake ON runs (wakes_at) WHERE status = 'suspended';
