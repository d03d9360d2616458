-- Grants: a person's approval remembered for a tool in a run or a thread
-- (see `store/grants.rs`), shared by every replica. A thread's grants go
-- with it.
CREATE TABLE grants (
    id         text PRIMARY KEY,
    tenant     text NOT NULL,
    tool_name  text NOT NULL,
    scope      text NOT NULL,
    run_id     uuid NOT NULL,
    thread_id  text,
    granted_by text NOT NULL,
    created_at bigint NOT NULL,
    expires_at bigint
);
CREATE INDEX grants_by_run ON grants (run_id);
CREATE INDEX grants_by_thread ON grants (tenant, thread_id);
