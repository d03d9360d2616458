-- A2A push notification configurations, per task (run): where the task's
-- updates are POSTed (see `store/push_configs.rs`). A run's configurations
-- go with it.
CREATE TABLE a2a_push_configs (
    run_id               TEXT NOT NULL,
    id                   TEXT NOT NULL,
    tenant               TEXT NOT NULL,
    url                  TEXT NOT NULL,
    token                TEXT NOT NULL,
    auth_scheme          TEXT NOT NULL,
    auth_credentials     TEXT NOT NULL,
    created_at           INTEGER NOT NULL,
    PRIMARY KEY (run_id, id)
);
-- A delivery ledger's deliveries may go to several targets (an A2A push
-- ledger's: one per configuration of the run): one delivery per event and
-- target, in order per run and target. SQLite cannot change a table's
-- UNIQUE constraint: the table is made again.
CREATE TABLE webhook_deliveries_targeted (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    webhook          TEXT NOT NULL,
    run_id           TEXT NOT NULL,
    event_major      INTEGER NOT NULL,
    event_minor      INTEGER NOT NULL,
    target           TEXT NOT NULL DEFAULT '',
    state            TEXT NOT NULL DEFAULT 'pending',
    attempts         INTEGER NOT NULL DEFAULT 0,
    enqueued_at      INTEGER NOT NULL,
    next_attempt_at  INTEGER NOT NULL,
    lease_owner      TEXT,
    lease_expires_at INTEGER,
    last_error       TEXT,
    finished_at      INTEGER,
    UNIQUE (webhook, event_major, event_minor, target)
);
INSERT INTO webhook_deliveries_targeted (id, webhook, run_id, event_major, event_minor, state, attempts,
    enqueued_at, next_attempt_at, lease_owner, lease_expires_at, last_error, finished_at)
SELECT id, webhook, run_id, event_major, event_minor, state, attempts, enqueued_at, next_attempt_at,
    lease_owner, lease_expires_at, last_error, finished_at FROM webhook_deliveries;
DROP TABLE webhook_deliveries;
ALTER TABLE webhook_deliveries_targeted RENAME TO webhook_deliveries;
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (webhook, next_attempt_at)
    WHERE state = 'pending';
CREATE INDEX webhook_deliveries_by_run ON webhook_deliveries (run_id, webhook, target, event_major, event_minor);
