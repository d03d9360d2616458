-- The servers that follow the other servers' writes (see
-- `store/postgres/listen.rs`): each LISTENs on the schema's channel and,
-- on that same connection, holds a session-level advisory lock on its
-- key. A write NOTIFYs only if a row of another server is here. A server
-- registers with this table locked exclusively, so that every write in
-- flight then, which found no such row, commits before the registration
-- does, and every later write finds it. Rows whose lock nobody holds are
-- deleted whenever a server registers, and now and then by every server.
CREATE TABLE listeners (
    origin      text PRIMARY KEY,
    lock_key    bigint NOT NULL UNIQUE,
    listening_since bigint NOT NULL
);
