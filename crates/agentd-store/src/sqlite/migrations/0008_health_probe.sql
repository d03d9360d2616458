-- One row that the health check writes (see `RunStore::ping`): a write
-- that fails while the store refuses writes (a full disk, a read-only
-- file), so that health says NOT_SERVING then.
CREATE TABLE health_probe (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    probed_at INTEGER NOT NULL
);
