-- A run's events, one row per write (the chunks that one write stored,
-- encoded together) instead of one row per chunk: a step's chunks cost one
-- B-tree insert, and compress together. `last_seq` keys the row, so that
-- the rows holding the chunks after a seq are one range of the key.
-- The rows of `events` (one chunk each) are moved here by the store when
-- it applies this migration (see `move_single_events` in `sqlite.rs`),
-- then `events` is dropped.
CREATE TABLE event_batches (
    run_id    TEXT NOT NULL,
    last_seq  INTEGER NOT NULL,
    first_seq INTEGER NOT NULL,
    events    BLOB NOT NULL,
    PRIMARY KEY (run_id, last_seq)
) WITHOUT ROWID;
