-- Threads: the runs a tenant started with one client-chosen thread id.
-- Each run keeps only its own messages; the thread row names its latest
-- run, which a new run of the thread replaces with a compare-and-set in
-- the same transaction that creates the run (one run at a time per
-- thread). Thread ids compare bytewise (COLLATE "C"), as in SQLite, so
-- that ListThreads orders threads alike on every backend.
CREATE TABLE threads (
    tenant      text NOT NULL,
    thread_id   text COLLATE "C" NOT NULL,
    created_at  bigint NOT NULL,
    updated_at  bigint NOT NULL,
    latest_run  uuid NOT NULL,
    PRIMARY KEY (tenant, thread_id)
);
CREATE INDEX threads_by_tenant_created ON threads (tenant, created_at, thread_id);
CREATE INDEX threads_by_updated ON threads (updated_at);

ALTER TABLE runs ADD COLUMN thread_id text;
CREATE INDEX runs_by_thread ON runs (tenant, thread_id, id) WHERE thread_id IS NOT NULL;
