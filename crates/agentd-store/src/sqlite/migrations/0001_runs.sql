-- Runs: the queryable columns, plus the whole record as JSON.
CREATE TABLE runs (
    id          TEXT PRIMARY KEY,
    agent_id    TEXT NOT NULL,
    status      TEXT NOT NULL,
    version     INTEGER NOT NULL,
    last_seq    INTEGER NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    expires_at  INTEGER,
    request_id  TEXT,
    record      BLOB NOT NULL
);

CREATE INDEX runs_by_status ON runs (status, id);
CREATE INDEX runs_by_agent ON runs (agent_id, id);
CREATE UNIQUE INDEX runs_by_request ON runs (request_id) WHERE request_id IS NOT NULL;

-- Every chunk of every run, in order.
CREATE TABLE events (
    run_id  TEXT NOT NULL,
    seq     INTEGER NOT NULL,
    time    INTEGER NOT NULL,
    chunk   BLOB NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
