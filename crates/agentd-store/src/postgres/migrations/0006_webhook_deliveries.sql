-- The webhook delivery ledger (see `store/deliveries.rs`). The run events
-- are the outbox; a webhook's cursor is the position after which it has
-- enqueued nothing yet, moved with a compare-and-set in the statement
-- that stores the deliveries it enqueues, so that two replicas never
-- enqueue one event twice. A delivery names its event by position
-- (`run_events` (txid, id) = (event_major, event_minor)) and is pending
-- (due at `next_attempt_at`, perhaps claimed by one replica until
-- `lease_expires_at`: claims take rows `FOR UPDATE SKIP LOCKED`),
-- delivered or failed.
CREATE TABLE ledger_cursors (
    webhook text PRIMARY KEY,
    major   bigint NOT NULL,
    minor   bigint NOT NULL
);
CREATE TABLE webhook_deliveries (
    id               bigserial PRIMARY KEY,
    webhook          text NOT NULL,
    run_id           uuid NOT NULL,
    event_major      bigint NOT NULL,
    event_minor      bigint NOT NULL,
    state            text NOT NULL DEFAULT 'pending',
    attempts         integer NOT NULL DEFAULT 0,
    enqueued_at      bigint NOT NULL,
    next_attempt_at  bigint NOT NULL,
    lease_owner      text,
    lease_expires_at bigint,
    last_error       text,
    finished_at      bigint,
    UNIQUE (webhook, event_major, event_minor)
);
-- The claim's search for due deliveries, and the pending count.
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (webhook, next_attempt_at)
    WHERE state = 'pending';
-- A run's earlier pending delivery holds the next back; a run's
-- deliveries go with it.
CREATE INDEX webhook_deliveries_by_run ON webhook_deliveries (run_id, webhook, event_major, event_minor);
