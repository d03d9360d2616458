//! Several agentd processes on one store, as in production: runs suspended
//! on one replica and resumed on another, racing Resumes, cross-replica
//! live following, and crash recovery after `kill -9` of the replica that
//! executes a run (PostgreSQL), or of the only server (SQLite, restarted),
//! and how fast a dead replica's runs move on (`takeover.rs`).
//! The PostgreSQL tests use a schema of their own (see `pg.rs`). Webhooks
//! from two replicas: `webhooks.rs`.

mod crash;
mod cross;
mod process;
mod scale;
mod takeover;
mod watch;
mod webhooks;
