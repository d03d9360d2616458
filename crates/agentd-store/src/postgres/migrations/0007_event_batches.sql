-- A run's events, one row per write (the chunks that one write stored,
-- encoded together) instead of one row per chunk, as the SQLite store
-- keeps them: a step's chunks cost one heap tuple and one index entry,
-- and compress together. `last_seq` keys the row, so that the rows
-- holding the chunks after a seq are one range of the key.
-- The rows of `events` (one chunk each) are moved here by the store when
-- it applies this migration (see `move_single_events` in `migrate.rs`),
-- then `events` is dropped.
CREATE TABLE event_batches (
    run_id    uuid NOT NULL,
    last_seq  bigint NOT NULL,
    first_seq bigint NOT NULL,
    events    bytea NOT NULL,
    PRIMARY KEY (run_id, last_seq)
);
