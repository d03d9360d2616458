-- Runs: the queryable columns, plus the record of the last commit as JSON.
-- version, last_seq and lease_expires_at are the truth: appends move them
-- without rewriting the record, and reads lay them over it.
CREATE TABLE runs (
    id                uuid PRIMARY KEY,
    agent_id          text NOT NULL,
    status            text NOT NULL,
    version           bigint NOT NULL,
    last_seq          bigint NOT NULL,
    created_at        bigint NOT NULL,
    updated_at        bigint NOT NULL,
    expires_at        bigint,
    request_id        text,
    lease_owner       text,
    lease_expires_at  bigint,
    record            bytea NOT NULL
);

CREATE UNIQUE INDEX runs_by_request ON runs (request_id) WHERE request_id IS NOT NULL;
CREATE INDEX runs_by_status_agent ON runs (status, agent_id, id);
CREATE INDEX runs_by_agent ON runs (agent_id, id);
CREATE INDEX runs_by_expiry ON runs (status, expires_at);
CREATE INDEX runs_by_lease ON runs (status, lease_expires_at);

-- Every chunk of every run, in order.
CREATE TABLE events (
    run_id  uuid NOT NULL,
    seq     bigint NOT NULL,
    time    bigint NOT NULL,
    chunk   bytea NOT NULL,
    PRIMARY KEY (run_id, seq)
);
