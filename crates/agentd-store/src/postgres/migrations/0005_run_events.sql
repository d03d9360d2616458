-- Run events: one row for each change of a run's status, written by the
-- same statement as the change (see `RunStore`). Readers order them by
-- (txid, id): the writing transaction's id, then a sequence within it.
-- Transaction ids are given out in the order transactions first write,
-- not in the order they commit, so a reader takes only the events of
-- transactions older than every transaction still running (its snapshot's
-- xmin): no event can appear later before one it has read.
CREATE TABLE run_events (
    txid       bigint NOT NULL DEFAULT (pg_current_xact_id()::text::bigint),
    id         bigserial,
    tenant     text NOT NULL,
    run_id     uuid NOT NULL,
    agent_id   text NOT NULL,
    thread_id  text,
    kind       text NOT NULL,
    status     text NOT NULL,
    time       bigint NOT NULL,
    pending    bytea,
    expires_at bigint,
    PRIMARY KEY (txid, id)
);
CREATE INDEX run_events_by_tenant ON run_events (tenant, txid, id);
CREATE INDEX run_events_by_run ON run_events (run_id);
