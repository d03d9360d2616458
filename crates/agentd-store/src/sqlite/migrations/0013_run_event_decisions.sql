-- The decisions a run event was made of (who answered the calls of a
-- RESUMED run, who cancelled, the deadline of an EXPIRED one), as they were
-- then; NULL for none.
ALTER TABLE run_events ADD COLUMN decisions BLOB;
