-- One row that every replica's health check writes (see `RunStore::ping`):
-- a write that fails while the database refuses writes (a full disk, a
-- read-only standby), so that health says NOT_SERVING then.
CREATE TABLE health_probe (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    probed_at BIGINT NOT NULL
);
