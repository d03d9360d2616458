-- Grants: a person's approval remembered for a tool in a run or a thread
-- (see `store/grants.rs`). A thread's grants go with it.
CREATE TABLE grants (
    id         TEXT PRIMARY KEY,
    tenant     TEXT NOT NULL,
    tool_name  TEXT NOT NULL,
    scope      TEXT NOT NULL,
    run_id     TEXT NOT NULL,
    thread_id  TEXT,
    granted_by TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER
);
CREATE INDEX grants_by_run ON grants (run_id);
CREATE INDEX grants_by_thread ON grants (tenant, thread_id);
