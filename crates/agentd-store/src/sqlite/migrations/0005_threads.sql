-- Threads: the runs a tenant started with one client-chosen thread id.
-- Each run keeps only its own messages; the thread row names its latest
-- run, which a new run of the thread replaces with a compare-and-set in
-- the same write that creates the run (one run at a time per thread).
CREATE TABLE threads (
    tenant      TEXT NOT NULL,
    thread_id   TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    latest_run  TEXT NOT NULL,
    PRIMARY KEY (tenant, thread_id)
) WITHOUT ROWID;
CREATE INDEX threads_by_tenant_created ON threads (tenant, created_at, thread_id);
CREATE INDEX threads_by_updated ON threads (updated_at);

ALTER TABLE runs ADD COLUMN thread_id TEXT;
CREATE INDEX runs_by_thread ON runs (tenant, thread_id, id) WHERE thread_id IS NOT NULL;
