-- Leases: which replica executes a running run, and until when it may
-- without renewing; recovery looks for running runs whose lease expired.
ALTER TABLE runs ADD COLUMN lease_owner TEXT;
ALTER TABLE runs ADD COLUMN lease_expires_at INTEGER;
CREATE INDEX runs_by_lease ON runs (status, lease_expires_at);
