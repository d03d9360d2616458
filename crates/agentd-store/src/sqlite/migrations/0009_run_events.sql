-- Run events: one row for each change of a run's status, written in the
-- same transaction as the change (see `RunStore`). `position` orders them
-- for every reader; AUTOINCREMENT never gives a position again, even after
-- the newest event went with its run, so a watcher's cursor always names
-- the same place. The row has what a watcher filters on and shows; a
-- suspension's pending calls and expiry are kept as they were then.
CREATE TABLE run_events (
    position   INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant     TEXT NOT NULL,
    run_id     TEXT NOT NULL,
    agent_id   TEXT NOT NULL,
    thread_id  TEXT,
    kind       TEXT NOT NULL,
    status     TEXT NOT NULL,
    time       INTEGER NOT NULL,
    pending    BLOB,
    expires_at INTEGER
);
CREATE INDEX run_events_by_tenant ON run_events (tenant, position);
CREATE INDEX run_events_by_run ON run_events (run_id);
