-- A2A push notification configurations, per task (run): where the task's
-- updates are POSTed (see `store/push_configs.rs`). A run's configurations
-- go with it.
CREATE TABLE a2a_push_configs (
    run_id           uuid NOT NULL,
    id               text NOT NULL,
    tenant           text NOT NULL,
    url              text NOT NULL,
    token            text NOT NULL,
    auth_scheme      text NOT NULL,
    auth_credentials text NOT NULL,
    created_at       bigint NOT NULL,
    PRIMARY KEY (run_id, id)
);
-- A delivery ledger's deliveries may go to several targets (an A2A push
-- ledger's: one per configuration of the run): one delivery per event and
-- target, in order per run and target.
ALTER TABLE webhook_deliveries ADD COLUMN target text NOT NULL DEFAULT '';
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_webhook_event_major_event_minor_key;
ALTER TABLE webhook_deliveries ADD UNIQUE (webhook, event_major, event_minor, target);
DROP INDEX webhook_deliveries_by_run;
CREATE INDEX webhook_deliveries_by_run ON webhook_deliveries (run_id, webhook, target, event_major, event_minor);
