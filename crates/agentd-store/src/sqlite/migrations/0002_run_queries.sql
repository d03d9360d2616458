-- Indexes for the run queries: listing by status and agent together,
-- newest first, and the expiry sweep's suspended runs by expiry time.
CREATE INDEX runs_by_status_agent ON runs (status, agent_id, id);
CREATE INDEX runs_by_expiry ON runs (status, expires_at);
