-- The replicas that executed runs, each with the key of the session-level
-- advisory lock it holds for as long as it lives (see
-- `store/postgres/presence.rs`). A running run whose lease owner has a row
-- here but whose lock nobody holds is an orphan at once, whatever its
-- lease says; a lease owner without a row (a replica of an earlier
-- version, an embedded runtime) is judged by its lease alone. Rows of
-- replicas that are gone and own no running run are deleted whenever a
-- replica registers.
CREATE TABLE replicas (
    replica_id     text PRIMARY KEY,
    lock_key       bigint NOT NULL UNIQUE,
    registered_at  bigint NOT NULL
);
