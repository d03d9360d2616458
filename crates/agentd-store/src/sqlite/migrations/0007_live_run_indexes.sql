-- The expiry sweep, recovery and the suspended-runs gauge look only at
-- suspended or running runs. Partial indexes hold just those: a run that
-- completes leaves them instead of moving within them, and they stay the
-- size of the live runs, however many finished runs the store keeps.
-- Every listing filters by tenant (see 0004), so the listing indexes
-- without a tenant go: each was one more B-tree that every run's every
-- write had to change.
DROP INDEX runs_by_status;
DROP INDEX runs_by_agent;
DROP INDEX runs_by_status_agent;
DROP INDEX runs_by_expiry;
DROP INDEX runs_by_lease;
CREATE INDEX runs_suspended_by_expiry ON runs (expires_at) WHERE status = 'suspended';
CREATE INDEX runs_suspended_by_agent ON runs (agent_id) WHERE status = 'suspended';
CREATE INDEX runs_running_by_lease ON runs (lease_expires_at) WHERE status = 'running';
