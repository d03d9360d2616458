-- The webhook delivery ledger (see `store/deliveries.rs`). The run events
-- are the outbox; a webhook's cursor is the position after which it has
-- enqueued nothing yet, moved with a compare-and-set in the write that
-- stores the deliveries it enqueues. A delivery names its event by
-- position (`event_minor`: SQLite's positions are the run events' keys)
-- and is pending (due at `next_attempt_at`, perhaps claimed until
-- `lease_expires_at`), delivered or failed.
CREATE TABLE ledger_cursors (
    webhook TEXT PRIMARY KEY,
    major   INTEGER NOT NULL,
    minor   INTEGER NOT NULL
);
CREATE TABLE webhook_deliveries (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    webhook          TEXT NOT NULL,
    run_id           TEXT NOT NULL,
    event_major      INTEGER NOT NULL,
    event_minor      INTEGER NOT NULL,
    state            TEXT NOT NULL DEFAULT 'pending',
    attempts         INTEGER NOT NULL DEFAULT 0,
    enqueued_at      INTEGER NOT NULL,
    next_attempt_at  INTEGER NOT NULL,
    lease_owner      TEXT,
    lease_expires_at INTEGER,
    last_error       TEXT,
    finished_at      INTEGER,
    UNIQUE (webhook, event_major, event_minor)
);
-- The claim's search for due deliveries, and the pending count.
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (webhook, next_attempt_at)
    WHERE state = 'pending';
-- A run's earlier pending delivery holds the next back; a run's
-- deliveries go with it.
CREATE INDEX webhook_deliveries_by_run ON webhook_deliveries (run_id, webhook, event_major, event_minor);
