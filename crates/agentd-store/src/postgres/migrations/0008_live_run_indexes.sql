-- The expiry sweep, recovery and the suspended-runs gauge look only at
-- suspended or running runs. Partial indexes hold just those: a run that
-- completes leaves them instead of moving within them, and they stay the
-- size of the live runs, however many finished runs the store keeps.
-- Every listing filters by tenant (see 0002), so the listing indexes
-- without a tenant go: each was one more B-tree entry that every write of
-- every run added (a write changes the run's status, so PostgreSQL cannot
-- update the row in place and indexes its new version in every index).
DROP INDEX runs_by_status_agent;
DROP INDEX runs_by_agent;
DROP INDEX runs_by_expiry;
DROP INDEX runs_by_lease;
CREATE INDEX runs_suspended_by_expiry ON runs (expires_at) WHERE status = 'suspended';
CREATE INDEX runs_suspended_by_agent ON runs (agent_id) WHERE status = 'suspended';
CREATE INDEX runs_running_by_lease ON runs (lease_expires_at NULLS FIRST) WHERE status = 'running';
