//! The run store: where runs, their state and their event logs live. One
//! documented trait, several backends: SQLite (the embedded default) and
//! memory (tests, embedding). Backends never interpret run state; they keep
//! it, guard writes with a version compare-and-set, and return it.

mod memory;
mod query;
mod sqlite;

use async_trait::async_trait;

pub use memory::MemoryStore;
pub use query::RunQuery;
pub use sqlite::SqliteStore;

use crate::chunk::Event;
use crate::run::{RunId, RunRecord};
use crate::time::Timestamp;

/// A store operation that failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("run not found")]
    NotFound,
    #[error("run already exists")]
    AlreadyExists,
    /// Somebody else wrote the run since it was read.
    #[error("run changed concurrently (expected version {expected}, found {actual})")]
    VersionConflict { expected: u64, actual: u64 },
    #[error("store unavailable: {0}")]
    Backend(String),
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
}

/// Durable storage of runs and their event logs.
///
/// Every write is atomic: the run record and the events that come with it
/// are stored together or not at all.
#[async_trait]
pub trait RunStore: Send + Sync + 'static {
    /// Stores a new run with its first events. `AlreadyExists` if the id is
    /// taken, or if another run has the same `request_id` (idempotency key).
    async fn create_run(&self, run: &RunRecord, events: &[Event]) -> Result<(), StoreError>;

    /// Replaces a run's record and appends `events` to its log, if the stored
    /// version is still `expected_version` (`run.version` is the new one).
    /// `VersionConflict` otherwise, `NotFound` if there is no such run.
    async fn commit(
        &self,
        run: &RunRecord,
        expected_version: u64,
        events: &[Event],
    ) -> Result<(), StoreError>;

    /// Reads a run.
    async fn load_run(&self, id: RunId) -> Result<RunRecord, StoreError>;

    /// Reads a run's events with `seq > after_seq`, in order.
    async fn read_events(&self, id: RunId, after_seq: u64) -> Result<Vec<Event>, StoreError>;

    /// The run started with this `request_id` (idempotency key), if any.
    async fn find_run_by_request_id(&self, request_id: &str) -> Result<Option<RunId>, StoreError>;

    /// Runs that pass `query`'s filters, newest first (by id, descending),
    /// at most `query.limit` of them, all older than `query.before`.
    async fn list_runs(&self, query: &RunQuery) -> Result<Vec<RunRecord>, StoreError>;

    /// Suspended runs whose `expires_at` is at or before `now`, soonest
    /// expired first, at most `limit` of them. The caller expires each one
    /// with a version compare-and-set.
    async fn due_suspensions(&self, now: Timestamp, limit: usize) -> Result<Vec<RunId>, StoreError>;
}

/// Opens the store a URL names: `sqlite://PATH` (or a plain path) or
/// `memory:`.
pub fn open(url: &str) -> Result<std::sync::Arc<dyn RunStore>, StoreError> {
    if url == "memory:" || url == "memory://" {
        return Ok(std::sync::Arc::new(MemoryStore::default()));
    }
    let path = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
        .unwrap_or(url);
    if path.contains("://") {
        return Err(StoreError::Backend(format!(
            "unsupported store URL {url:?}: use sqlite://PATH or memory:"
        )));
    }
    Ok(std::sync::Arc::new(SqliteStore::open(path)?))
}
