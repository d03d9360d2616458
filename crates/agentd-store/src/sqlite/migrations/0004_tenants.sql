-- Tenants: every run belongs to the tenant that started it, and only that
-- tenant sees it. Runs stored before tenants existed belong to the default
-- tenant. Idempotency keys (request ids) are unique per tenant, and every
-- listing of a caller filters by tenant, with an index for each
-- combination of the other filters (newest first, without a sort).
ALTER TABLE runs ADD COLUMN tenant TEXT NOT NULL DEFAULT 'default';
DROP INDEX runs_by_request;
CREATE UNIQUE INDEX runs_by_tenant_request ON runs (tenant, request_id) WHERE request_id IS NOT NULL;
CREATE INDEX runs_by_tenant ON runs (tenant, id);
CREATE INDEX runs_by_tenant_status ON runs (tenant, status, id);
CREATE INDEX runs_by_tenant_agent ON runs (tenant, agent_id, id);
CREATE INDEX runs_by_tenant_status_agent ON runs (tenant, status, agent_id, id);
