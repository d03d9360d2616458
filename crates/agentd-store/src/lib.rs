//! The run store: where runs, their state and their chunks live, with
//! the threads they belong to, the run events, the ledgers of deliveries
//! made from them and A2A push configurations. Backends never interpret
//! run state; they keep it, guard writes with a version compare-and-set,
//! and return it.
//!
//! Small traits, one per thing callers need, each in its own file:
//! [`RunStore`] (a run's record and chunks) and [`RunQueries`] (reads
//! across runs) in `runs.rs`, [`ThreadStore`], [`RunEventLog`],
//! [`DeliveryLedger`], [`PushConfigStore`], [`GrantStore`] and
//! [`Presence`] (the store as a whole). [`Store`] is all of them; the
//! runtime's parts each hold only the ones they touch. Three backends
//! implement each: `sqlite/` (the embedded default), `postgres/` (several
//! replicas sharing one database) and `memory.rs` (tests, embedding);
//! [`Layered`] puts any store behind a hook (the runtime's fence and
//! timing, a test's faults).

mod deliveries;
mod encoding;
mod feed;
mod grants;
mod layered;
mod memory;
mod orphan;
mod postgres;
mod presence;
mod push_configs;
mod query;
mod record;
mod run_events;
mod runs;
mod sqlite;
mod threads;

pub use deliveries::{
    AttemptOutcome, Claim, ClaimedDelivery, DeliveryClaim, DeliveryId, DeliveryLedger, Enqueue, NewDelivery,
};
pub use feed::{FeedItem, FeedMessage, RunFeed, Sharing};
pub use grants::GrantStore;
pub use layered::{Access, Layered, Operation, StoreHook};
pub use memory::MemoryStore;
pub use orphan::{Holder, Orphan};
pub use postgres::{PostgresStore, POOL_SIZE as POSTGRES_POOL_SIZE};
pub use presence::Presence;
pub use push_configs::{PushConfig, PushConfigStore};
pub use query::RunQuery;
pub use run_events::{RunEventLog, RunEventPage};
pub use runs::{RunQueries, RunStore};
pub use sqlite::{SqliteStore, Synchronous};
pub use threads::ThreadStore;

/// A store operation that failed.
#[derive(Clone, Debug, thiserror::Error)]
pub enum StoreError {
    #[error("run not found")]
    NotFound,
    #[error("run already exists")]
    AlreadyExists,
    /// A run of a thread was to follow a latest run that is no longer the
    /// thread's latest (or the thread appeared, or went, meanwhile).
    #[error("the thread's latest run changed concurrently")]
    ThreadMoved,
    /// Somebody else wrote the run since it was read.
    #[error("run changed concurrently (expected version {expected}, found {actual})")]
    VersionConflict { expected: u64, actual: u64 },
    /// This process's hold on the run ended before it wrote: its execution
    /// was fenced (the run moved on elsewhere, or its lease could not be
    /// renewed), or another claim of the same suspension here has the
    /// run. Nothing was written; what the run became is the store's to say.
    #[error("the run is no longer this execution's to write")]
    Superseded,
    #[error("store unavailable: {0}")]
    Backend(String),
    /// The store's disk (or its database's quota) is full: nothing can be
    /// written until space is freed.
    #[error("store full: {0}")]
    Full(String),
    /// The store belongs to another process (an embedded store that one
    /// server at a time may open).
    #[error("store in use: {0}")]
    InUse(String),
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
}

/// A stored value that does not read back (a backend's decoding failed).
pub(crate) fn corrupt(error: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(error.to_string())
}

/// Everything a server keeps in its store: the traits above together, as
/// the server opens it ([`open`]) and hands it to the runtime
/// (`Arc<dyn Store>`). No part of the runtime holds the whole: it is split
/// into one handle per trait (`Arc<dyn RunStore>`, ..., by upcasting, in
/// `runtime/tables.rs`), and each part takes the handles of the tables it
/// touches. Implemented by every type that implements
/// them all; the traits have no default bodies, so a method added to one is
/// a compile error in each backend (and in [`Layered`]) until it has it.
pub trait Store:
    RunStore + RunQueries + ThreadStore + RunEventLog + DeliveryLedger + PushConfigStore + GrantStore + Presence
{
}

impl<S> Store for S where
    S: RunStore
        + RunQueries
        + ThreadStore
        + RunEventLog
        + DeliveryLedger
        + PushConfigStore
        + GrantStore
        + Presence
{
}

/// Opens the store a URL names: `sqlite://PATH` (or a plain path;
/// `?synchronous=normal` trades power-loss durability for fewer fsyncs, see
/// [`Synchronous`]),
/// `postgres://...` / `postgresql://...` (see [`PostgresStore::open`]; call
/// it inside a Tokio runtime) or `memory:`.
pub fn open(url: &str) -> Result<std::sync::Arc<dyn Store>, StoreError> {
    if url == "memory:" || url == "memory://" {
        return Ok(std::sync::Arc::new(MemoryStore::default()));
    }
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        return Ok(std::sync::Arc::new(PostgresStore::open(url)?));
    }
    let path = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
        .unwrap_or(url);
    if path.contains("://") {
        return Err(StoreError::Backend(format!(
            "unsupported store URL {:?}: use sqlite://PATH, postgres://... or memory:",
            agentd_domain::Redacted(url)
        )));
    }
    let (path, synchronous) = sqlite::parse_location(path)?;
    Ok(std::sync::Arc::new(SqliteStore::open_with(path, synchronous)?))
}
